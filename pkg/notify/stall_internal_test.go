package notify

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testproxy"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/nats-io/nats.go/jetstream"
)

// The notifier's link to NATS stalls (open, but nothing gets through) for
// longer than its pull's heartbeats: it warns that reading notifications
// failed and to check NATS, naming its consumer, and once the link flows
// again its pull takes the stream's messages again.
func TestStalledLinkWarnsThenPullsAgain(t *testing.T) {
	ns := testnats.StartListening(t)
	jsd := testnats.JetStreamOf(t, testnats.Connect(t, ns)) // publishes and reads the consumer past the proxy
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := jsd.CreateStream(ctx, jetstream.StreamConfig{Name: "stall", Subjects: []string{"stall.>"}}); err != nil {
		t.Fatal(err)
	}
	proxy := testproxy.Start(t, ns.Server().Addr().String())
	js := testnats.JetStreamOf(t, testnats.Dial(t, proxy.URL("nats")))

	var logs testlog.Buffer
	n := &Notifier{cfg: Config{JS: js, Stream: "stall", Preview: PreviewText, After: time.Hour, AckWait: time.Minute, Now: time.Now},
		m: newMetrics(nil), sampled: logsample.New(slog.New(slog.NewTextHandler(&logs, nil)), logsample.Config{})}
	consuming, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.consume(consuming) }()
	defer func() { stop(); <-done }()

	// An edit is acked at once (nobody is notified of one), so the
	// consumer's ack floor shows the pull took it.
	publish := func(seq int64) {
		data, err := codec.EncodeEnvelope(&chatd.Envelope{OutboxID: seq, Recipients: []string{"alice", "bob"},
			Message: chatd.Message{ID: "m1", CID: "c1", Chat: "chat1", From: "alice", Body: "edited", Seq: seq, TS: time.Now(), Kind: chatd.EventEdit}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jsd.Publish(ctx, "stall.chat1", data); err != nil {
			t.Fatal(err)
		}
	}
	acked := func(seq uint64) func() bool {
		return func() bool {
			c, err := jsd.Consumer(ctx, "stall", ConsumerName)
			if err != nil {
				return false
			}
			info, err := c.Info(ctx)
			return err == nil && info.AckFloor.Stream >= seq
		}
	}
	testwait.For(t, 10*time.Second, "the consumer to be made", func() bool {
		_, err := jsd.Consumer(ctx, "stall", ConsumerName)
		return err == nil
	})
	publish(1)
	testwait.For(t, 10*time.Second, "the first message acked", acked(1))

	proxy.Stall()
	publish(2)
	const warning = `msg="reading notifications from the stream failed; pulling again, they wait meanwhile (check NATS)" consumer=` + ConsumerName
	testwait.For(t, 10*time.Second, "the warning while stalled", func() bool { return strings.Contains(logs.String(), warning) })
	proxy.Resume()
	testwait.For(t, 10*time.Second, "the message published during the stall acked", acked(2))
}
