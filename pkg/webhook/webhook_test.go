package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
)

func endpoint(rc *receiver) webhook.Endpoint {
	return webhook.Endpoint{URL: rc.srv.URL + "/hook", Secret: testSecret}
}

// The receiver is unreachable (connections closed) for a while, then back:
// every event arrives, signed, in per-chat seq order, with the payload
// fields documented in docs/integrations.md.
func TestOutageThenEverythingInChatOrder(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	rc.setMode("drop")
	d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}, Workers: 2})
	waitDelivering(t, d)

	want := map[string]int64{}
	kinds := []chatd.EventKind{"", chatd.EventEdit, chatd.EventReaction, chatd.EventDelete}
	for i := range 40 {
		chat := []string{"c1", "c2", "c3"}[i%3]
		r.publish(t, chat, kinds[i%len(kinds)])
		want[chat]++
	}
	rc.waitUntil(t, "failed attempts during the outage", func(r *receiver) bool { return r.failures >= 6 })
	rc.setMode("ok")
	rc.waitUntil(t, "every event after the outage", func(r *receiver) bool { return r.distinct() == 40 })
	rc.checkOrder(t, want)

	rc.mu.Lock()
	var first webhook.Payload
	for _, d := range rc.got {
		if d.payload.Data.Event.ID == "c1-000001" {
			first = d.payload
		}
	}
	rc.mu.Unlock()
	if first.Type != "chat.message" || first.Data.Kind != chatd.EventMessage || first.Data.ChatID != "c1" ||
		first.Data.Seq != 1 || first.Data.Event.ID != "c1-000001" || first.Data.Event.Body != "hello c1-000001" ||
		len(first.Data.Recipients) != 2 || !first.Timestamp.Equal(first.Data.Event.TS) {
		t.Errorf("first payload: got %+v", first)
	}
	testwait.Until(t, "the delivered metric to count 40", func() bool { return d.metric(t, "chatd_webhook_delivered_total") >= 40 })
	if got := d.metric(t, "chatd_webhook_failed_attempts_total"); got < 6 {
		t.Errorf("failed metric: got %v, want >= 6", got)
	}
}

// An endpoint answering 500 to everything: each event is set aside after
// MaxAttempts posts and acked (the stream moves on); once the endpoint
// works, a replay delivers it with its original webhook-id and it leaves
// the dead letters.
func TestAlways500DeadLettersThenReplay(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	rc.setMode("500")
	ep := endpoint(rc)
	d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{ep}, MaxAttempts: 3})
	waitDelivering(t, d)
	r.publish(t, "c1", "")
	r.publish(t, "c2", chatd.EventEdit)

	ctx := context.Background()
	var failed []chatd.WebhookFailure
	testwait.Until(t, "two dead letters", func() bool {
		var err error
		failed, err = d.Failed(ctx, "", 0, 10)
		return err == nil && len(failed) == 2
	})
	for _, f := range failed {
		if f.Attempts != 3 || f.LastError == "" || f.Endpoint != webhook.ConsumerName(ep.URL) ||
			f.WebhookID != webhook.WebhookID(f.MessageID, f.Endpoint) {
			t.Errorf("dead letter: got %+v, want 3 attempts, a last error, its endpoint and webhook-id", f)
		}
	}
	if got := d.metric(t, "chatd_webhook_dead_lettered_total"); got != 2 {
		t.Errorf("dead-lettered metric: got %v, want 2", got)
	}
	testwait.Until(t, "the consumer to ack the set-aside events", func() bool {
		info, err := consumerInfo(r, ep)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	if err := d.Replay(ctx, failed[0].ID); !errors.Is(err, chatd.ErrUnavailable) {
		t.Fatalf("replay to a failing endpoint: got %v, want ErrUnavailable", err)
	}
	rc.setMode("ok")
	for _, f := range failed {
		if err := d.Replay(ctx, f.ID); err != nil {
			t.Fatalf("replay %d: %v", f.ID, err)
		}
	}
	if err := d.Replay(ctx, failed[0].ID); !errors.Is(err, chatd.ErrNotFound) {
		t.Fatalf("replay of a replayed dead letter: got %v, want ErrNotFound", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 2 || rc.got[0].id != failed[0].WebhookID || rc.got[1].id != failed[1].WebhookID {
		t.Fatalf("replayed: got %+v, want the two dead letters' webhook-ids", rc.got)
	}
	if left, _ := d.Failed(ctx, "", 0, 10); len(left) != 0 {
		t.Fatalf("dead letters after replay: got %d, want 0", len(left))
	}
}

// A node dies (its NATS connection gone, no nak, its lock's session
// closed) while it retries an event: the next node waits for what the dead
// one held, and the endpoint gets every event in per-chat order; a
// duplicate carries the webhook-id (and body) it had before.
func TestHardStopMidDeliveryLosesNothing(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	cfg := webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}, AckWait: time.Second, Workers: 2}
	nc := testnats.Connect(t, r.ns)
	a := r.start(t, jsOf(t, nc), cfg)
	waitDelivering(t, a)
	want := map[string]int64{}
	for i := range 20 {
		chat := []string{"c1", "c2"}[i%2]
		r.publish(t, chat, "")
		want[chat]++
	}
	rc.waitUntil(t, "the first events", func(r *receiver) bool { return r.distinct() >= 10 })
	rc.setMode("500")
	for i := range 20 {
		chat := []string{"c1", "c2"}[i%2]
		r.publish(t, chat, "")
		want[chat]++
	}
	rc.waitUntil(t, "a failing attempt", func(r *receiver) bool { return r.failures >= 2 })
	nc.Close() // the node dies: nothing it holds is acked or given back
	a.stop()
	rc.setMode("ok")

	b := r.start(t, mustJS(t, r.ns), cfg)
	rc.waitUntil(t, "every event after the takeover", func(r *receiver) bool { return r.distinct() == 40 })
	rc.checkOrder(t, want)
	if got := b.metric(t, "chatd_webhook_delivering"); got != 1 {
		t.Errorf("delivering on the second node: got %v, want 1", got)
	}
}

// Two nodes on one NATS and one database: one delivers each event, the
// other stands by; when the first stops, the second takes over and
// nothing is delivered twice or lost.
func TestTwoNodesOneDeliverer(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	cfg := webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}}
	a := r.start(t, mustJS(t, r.ns), cfg)
	waitDelivering(t, a)
	b := r.start(t, mustJS(t, r.ns), cfg)
	want := map[string]int64{}
	for i := range 30 {
		chat := []string{"c1", "c2", "c3"}[i%3]
		r.publish(t, chat, "")
		want[chat]++
	}
	rc.waitUntil(t, "the first 30", func(r *receiver) bool { return r.distinct() == 30 })
	testwait.Until(t, "the delivered metric", func() bool { return a.metric(t, "chatd_webhook_delivered_total") == 30 })
	if da, db := a.metric(t, "chatd_webhook_delivered_total"), b.metric(t, "chatd_webhook_delivered_total"); da != 30 || db != 0 {
		t.Fatalf("delivered by a, b: got %v, %v, want 30, 0", da, db)
	}
	a.stop()
	waitDelivering(t, b)
	for i := range 30 {
		chat := []string{"c1", "c2", "c3"}[i%3]
		r.publish(t, chat, "")
		want[chat]++
	}
	rc.waitUntil(t, "the next 30", func(r *receiver) bool { return r.distinct() == 60 })
	rc.checkOrder(t, want)
	rc.mu.Lock()
	n := len(rc.got)
	rc.mu.Unlock()
	if n != 60 {
		t.Fatalf("requests accepted: got %d, want 60 (each event delivered once)", n)
	}
}

// Filters: an endpoint gets only its kinds and chats; the rest is acked
// without a request.
func TestFilters(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	ep := endpoint(rc)
	ep.Kinds, ep.Chats = []chatd.EventKind{chatd.EventReaction}, []string{"c2"}
	d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{ep}})
	waitDelivering(t, d)
	r.publish(t, "c1", chatd.EventReaction)
	r.publish(t, "c2", "")
	r.publish(t, "c2", chatd.EventReaction)
	rc.waitUntil(t, "the reaction of c2", func(r *receiver) bool { return r.distinct() == 1 })
	testwait.Until(t, "every event acked", func() bool {
		info, err := consumerInfo(r, ep)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if p := rc.got[0].payload; len(rc.got) != 1 || p.Type != "chat.reaction" || p.Data.ChatID != "c2" || p.Data.Event.Emoji != "👍" {
		t.Fatalf("filtered deliveries: got %+v", rc.got)
	}
}

func TestConfigRefusesWhatIsNotDelivered(t *testing.T) {
	r := mustRig(t)
	for _, tc := range []struct {
		name string
		ep   webhook.Endpoint
	}{
		{"only reads, no changes stream", webhook.Endpoint{URL: "https://x.example/h", Secret: testSecret, Kinds: []chatd.EventKind{chatd.EventRead}}},
		{"typing, never delivered", webhook.Endpoint{URL: "https://x.example/h", Secret: testSecret, Kinds: []chatd.EventKind{"typing"}}},
		{"secret without prefix", webhook.Endpoint{URL: "https://x.example/h", Secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		{"not http", webhook.Endpoint{URL: "ftp://x.example/h", Secret: testSecret}},
		{"only notify, notifications off", webhook.Endpoint{URL: "https://x.example/h", Secret: testSecret, Kinds: []chatd.EventKind{chatd.EventNotify}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := webhook.New(webhook.Config{JS: r.js, Stream: stream.DefaultName, Store: storeAdapter{r.st}, Endpoints: []webhook.Endpoint{tc.ep}})
			if err == nil {
				t.Fatal("got nil, want an error")
			}
		})
	}
}

func waitDelivering(t *testing.T, d *deliverer) {
	t.Helper()
	testwait.Until(t, "the deliverer to win the election", func() bool { return d.metric(t, "chatd_webhook_delivering") == 1 })
}

// An endpoint's workers post at once; each keeps its connection between
// events rather than opening one per event (which costs the sender a TCP
// and maybe TLS handshake per event and fills the box with TIME_WAIT).
func TestConnectionsAreKeptBetweenEvents(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	const workers = 8
	d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}, Workers: workers})
	waitDelivering(t, d)
	want := map[string]int64{}
	for i := range 400 {
		chat := fmt.Sprintf("c%d", i%32)
		r.publish(t, chat, "")
		want[chat]++
	}
	rc.waitUntil(t, "every event", func(r *receiver) bool { return r.distinct() == 400 })
	rc.checkOrder(t, want)
	// A worker may dial while another's connection is on its way back to
	// the pool, so a few more than the workers is fine; one per event is not.
	if got := rc.conns.Load(); got > 2*workers {
		t.Errorf("400 events over %d workers opened %d connections, want at most %d", workers, got, 2*workers)
	}
}

// A chat whose event the endpoint keeps refusing waits out its backoff
// alone: with a single worker, the other chats' events still go out
// meanwhile, and the refused chat's events follow in order once it is
// taken.
func TestARefusedChatHoldsBackOnlyItself(t *testing.T) {
	r := mustRig(t)
	rc := newReceiver(t)
	rc.setFailChat("stuck")
	d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}, Workers: 1,
		MaxAttempts: 100, MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second})
	waitDelivering(t, d)
	want := map[string]int64{"stuck": 2}
	r.publish(t, "stuck", "")
	r.publish(t, "stuck", chatd.EventEdit)
	for i := range 20 {
		chat := fmt.Sprintf("c%d", i%4)
		r.publish(t, chat, "")
		want[chat]++
	}
	rc.waitUntil(t, "the other chats' events while one is refused", func(r *receiver) bool { return r.distinct() == 20 })
	rc.mu.Lock()
	refused := rc.failures
	rc.mu.Unlock()
	if refused == 0 {
		t.Fatal("the refused chat was never tried")
	}
	rc.setFailChat("")
	rc.waitUntil(t, "the refused chat's events once taken", func(r *receiver) bool { return r.distinct() == 22 })
	rc.checkOrder(t, want)
}
