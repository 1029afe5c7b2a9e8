package notify

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/nats-io/nats.go/jetstream"
)

// A held message keeps what deciding and a notification need, not its
// delivery: the notifier holds thousands for seconds, and each delivery's
// data and parsed headers would be marked by every collection meanwhile.
// Its acknowledgements still reach JetStream through the delivery's reply
// subject.
func TestHeldMessagesKeepNotTheirDelivery(t *testing.T) {
	js := testnats.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "held", Subjects: []string{"held.>"}}); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("a long message body ", 50)
	data, err := codec.EncodeEnvelope(&chatd.Envelope{OutboxID: 1, Recipients: []string{"alice", "bob"},
		Message: chatd.Message{ID: "m1", CID: "c1", Chat: "chat1", From: "alice", Body: body, Seq: 1, TS: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "held.chat1", data); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "held", jetstream.ConsumerConfig{Durable: "n", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	msg := <-batch.Messages()
	if msg == nil {
		t.Fatal("no delivery")
	}
	delivery := weak.Make(&msg.Data()[0])

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := &Notifier{cfg: Config{JS: js, Preview: PreviewText, After: time.Minute, AckWait: time.Minute, Now: time.Now},
		m: newMetrics(nil), sampled: logsample.New(quiet, logsample.Config{})}
	s := &state{n: n, ws: newWindows(time.Minute), held: map[uint64]*held{}}
	s.take(msg)
	msg, batch = nil, nil
	if len(s.held) != 1 {
		t.Fatalf("held %d messages, want 1 (bob's window)", len(s.held))
	}
	runtime.GC()
	runtime.GC()
	if delivery.Value() != nil {
		t.Fatal("a held message keeps its delivery's data alive")
	}
	var h *held
	for _, h = range s.held {
	}
	if h.m.ID != "m1" || h.m.Chat != "chat1" || h.m.From != "alice" || h.m.Seq != 1 || h.m.Body != preview(body) {
		t.Fatalf("held %+v, want what a notification names, the body cut to its preview", h.m)
	}

	s.ack(h, ackDone)
	testwait.Until(t, "the ack to reach the consumer", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.AckFloor.Stream == 1
	})
}
