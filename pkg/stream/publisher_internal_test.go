package stream

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publisherStream makes a stream for the publisher tests: subjects t.>,
// messages of at most 256 bytes, a duplicate window.
func publisherStream(t testing.TB) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js := testnats.JetStream(t)
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "PUB", Subjects: []string{"t.>"}, MaxMsgSize: 256, Duplicates: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// Every kind of answer a real JetStream gives maps to the error the
// library's PublishMsgAsync gave, so permanent and transient decide as
// before: stored and duplicate are acknowledged, a message over the
// stream's size limit is the stream's permanent refusal, a subject no
// stream serves has no responders (transient).
func TestPublisherRoundOutcomesFromARealStream(t *testing.T) {
	js, st := publisherStream(t)
	p := newPublisher(js.Conn())
	defer p.close()
	rd, err := p.begin(4)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte(`{"m":1}`)
	sends := []struct{ subject, id string }{{"t.a", "1"}, {"t.a", "1"}, {"t.b", "2"}, {"elsewhere", "3"}}
	for i, s := range sends {
		data := small
		if i == 2 {
			data = []byte(strings.Repeat("x", 300))
		}
		if err := p.publish(rd, i, s.subject, s.id, data); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	errs := p.wait(context.Background(), rd, 5*time.Second)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("stored and duplicate: got %v, %v, want both acknowledged", errs[0], errs[1])
	}
	var apiErr *jetstream.APIError
	if !errors.As(errs[2], &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamMessageExceedsMaximum || !permanent(errs[2]) {
		t.Fatalf("oversize: got %v, want the stream's permanent refusal (err_code %d)", errs[2], jetstream.JSErrCodeStreamMessageExceedsMaximum)
	}
	if !errors.Is(errs[3], jetstream.ErrNoStreamResponse) || permanent(errs[3]) {
		t.Fatalf("no stream: got %v, want %v (transient)", errs[3], jetstream.ErrNoStreamResponse)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("stream holds %d messages, want 1 (the duplicate dropped, the oversize refused)", info.State.Msgs)
	}
	if n := p.pending(); n != 0 {
		t.Fatalf("pending after the round: got %d, want 0", n)
	}
}

// An answer is recorded once, for the round awaiting it. A round that ended
// with answers due retires its reply subjects, so a late answer to it is not
// taken by the next round's publish at the same index (index 0 below stays
// unanswered).
func TestPublisherKeepsAnswersToTheirRound(t *testing.T) {
	js := testnats.JetStream(t)
	p := newPublisher(js.Conn())
	defer p.close()
	first, err := p.begin(1)
	if err != nil {
		t.Fatal(err)
	}
	first.sent = 1 // as publish would have counted it
	old := p.prefix
	if errs := p.wait(context.Background(), first, 10*time.Millisecond); !errors.Is(errs[0], errAckTimeout) {
		t.Fatalf("first round: got %v, want %v", errs, errAckTimeout)
	}
	second, err := p.begin(2)
	if err != nil {
		t.Fatal(err)
	}
	if p.prefix == old {
		t.Fatalf("reply prefix %q kept after a round that ended unanswered, want a new one", old)
	}
	second.sent = 2
	ack := func(prefix string, i int, data string) {
		p.handle(&nats.Msg{Subject: prefix + strconv.Itoa(i), Data: []byte(data)})
	}
	refusal := `{"error":{"code":400,"err_code":10054,"description":"message size exceeds maximum allowed"}}`
	ack(old, 0, `{"stream":"PUB","seq":6}`) // the first round's, late
	ack(p.prefix, 1, `{"stream":"PUB","seq":7}`)
	ack(p.prefix, 1, refusal)
	ack(p.prefix, 5, `{"stream":"PUB","seq":8}`)
	errs := p.wait(context.Background(), second, 50*time.Millisecond)
	if !errors.Is(errs[0], errAckTimeout) || errs[1] != nil {
		t.Fatalf("second round: got %v, want [%v <nil>]", errs, errAckTimeout)
	}
}

// Rounds answered in full keep their reply subjects: the server sees the
// same few subjects round after round instead of a new one per publish.
func TestPublisherReusesReplySubjectsAfterAnsweredRounds(t *testing.T) {
	js, _ := publisherStream(t)
	p := newPublisher(js.Conn())
	defer p.close()
	var prefixes []string
	for r := range 3 {
		rd, err := p.begin(2)
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, p.prefix)
		for i := range 2 {
			if err := p.publish(rd, i, "t.a", strconv.Itoa(r*2+i), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		if got := string(p.reply); got != p.prefix+"1" {
			t.Fatalf("reply subject of publish 1: %q, want %q", got, p.prefix+"1")
		}
		for i, err := range p.wait(context.Background(), rd, 5*time.Second) {
			if err != nil {
				t.Fatalf("round %d publish %d: %v", r, i, err)
			}
		}
	}
	if prefixes[0] == "" || prefixes[1] != prefixes[0] || prefixes[2] != prefixes[0] {
		t.Fatalf("reply prefixes of three answered rounds: %q, want one", prefixes)
	}
}

// wait ends on ctx as well, with ctx's error for what is unanswered.
func TestPublisherWaitEndsWithTheContext(t *testing.T) {
	js := testnats.JetStream(t)
	p := newPublisher(js.Conn())
	defer p.close()
	rd, err := p.begin(1)
	if err != nil {
		t.Fatal(err)
	}
	rd.sent = 1
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if errs := p.wait(ctx, rd, time.Minute); !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("got %v, want %v", errs[0], context.Canceled)
	}
}

func TestAnswer(t *testing.T) {
	noResponders := &nats.Msg{Header: nats.Header{"Status": []string{"503"}}}
	tests := []struct {
		name string
		msg  *nats.Msg
		want error // nil: acknowledged; an *APIError: its ErrorCode is compared
	}{
		{"stored", &nats.Msg{Data: []byte(`{"stream":"S","seq":12}`)}, nil},
		{"duplicate", &nats.Msg{Data: []byte(`{"stream":"S","seq":12,"duplicate":true}`)}, nil},
		{"domain", &nats.Msg{Data: []byte(`{"stream":"S","domain":"hub","seq":3}`)}, nil},
		{"unknown field", &nats.Msg{Data: []byte(`{"stream":"S","seq":3,"val":"x"}`)}, nil},
		{"refused", &nats.Msg{Data: []byte(`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}`)},
			&jetstream.APIError{ErrorCode: 10077}},
		{"no responders", noResponders, jetstream.ErrNoStreamResponse},
		{"empty", &nats.Msg{}, jetstream.ErrInvalidJSAck},
		{"no stream", &nats.Msg{Data: []byte(`{"seq":3}`)}, jetstream.ErrInvalidJSAck},
		{"empty stream", &nats.Msg{Data: []byte(`{"stream":"","seq":3}`)}, jetstream.ErrInvalidJSAck},
		{"not json", &nats.Msg{Data: []byte(`+OK`)}, jetstream.ErrInvalidJSAck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := answer(tt.msg)
			var want, gotAPI *jetstream.APIError
			switch {
			case errors.As(tt.want, &want):
				if !errors.As(got, &gotAPI) || gotAPI.ErrorCode != want.ErrorCode {
					t.Fatalf("got %v, want an API error with err_code %d", got, want.ErrorCode)
				}
			case !errors.Is(got, tt.want) || (tt.want == nil && got != nil):
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// BenchmarkPublishRound is a relay round's publishing against an in-process
// JetStream: 256 envelope-sized messages out, every ack back. The library's
// PublishMsgAsync, which the relay used before, runs beside it for
// comparison.
func BenchmarkPublishRound(b *testing.B) {
	const n = 256
	data := []byte(strings.Repeat("x", 200))
	b.Run("publisher=relay", func(b *testing.B) {
		js, _ := publisherStream(b)
		p := newPublisher(js.Conn())
		defer p.close()
		b.ReportAllocs()
		id := 0
		for b.Loop() {
			publishRound(b, p, n, &id, func(int) string { return "t.a" }, data)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
	b.Run("publisher=jetstream", func(b *testing.B) {
		js, _ := publisherStream(b)
		pub, err := jetstream.New(js.Conn(), jetstream.WithPublishAsyncTimeout(5*time.Second), jetstream.WithPublishAsyncMaxPending(n))
		if err != nil {
			b.Fatal(err)
		}
		defer pub.CleanupPublisher()
		b.ReportAllocs()
		id := 0
		futures := make([]jetstream.PubAckFuture, n)
		for b.Loop() {
			for i := range n {
				id++
				futures[i], err = pub.PublishMsgAsync(&nats.Msg{Subject: "t.a", Data: data},
					jetstream.WithMsgID(strconv.Itoa(id)), jetstream.WithRetryAttempts(0))
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
}

// publishRound publishes n messages through p as one relay round and waits
// for every ack, failing b on any error. Message ids continue from *id;
// subject names each message's subject from its id.
func publishRound(b *testing.B, p *publisher, n int, id *int, subject func(id int) string, data []byte) {
	rd, err := p.begin(n)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		*id++
		if err := p.publish(rd, i, subject(*id), strconv.Itoa(*id), data); err != nil {
			b.Fatal(err)
		}
	}
	for _, err := range p.wait(context.Background(), rd, 5*time.Second) {
		if err != nil {
			b.Fatal(err)
		}
	}
}
