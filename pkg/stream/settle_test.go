package stream_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// acks stands in for push's account of local deliveries (push.Registry in
// chatd): which messages every local recipient has acked, and what the
// relay said it is done with.
type acks struct {
	mu                 sync.Mutex
	settled, taken     map[string]bool
	skipped, published []string // as Forget was told
}

func newAcks() *acks { return &acks{settled: make(map[string]bool), taken: make(map[string]bool)} }

func (a *acks) Settled(id string) (settled, taken bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.settled[id], a.settled[id] && a.taken[id]
}

// take settles batch as taken live by every recipient.
func (a *acks) take(batch ...store.Accepted) {
	a.settle(batch...)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range batch {
		a.taken[b.Message.ID] = true
	}
}

func (a *acks) Forget(skipped, published []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.skipped = append(a.skipped, skipped...)
	a.published = append(a.published, published...)
}

func (a *acks) settle(batch ...store.Accepted) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range batch {
		a.settled[b.Message.ID] = true
	}
}

// forgotten returns what Forget was told, each list sorted.
func (a *acks) forgotten() (skipped, published []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(slices.Values(a.skipped)), slices.Sorted(slices.Values(a.published))
}

func messageIDs(batch []store.Accepted) []string {
	ids := make([]string, len(batch))
	for i, b := range batch {
		ids[i] = b.Message.ID
	}
	return slices.Sorted(slices.Values(ids))
}

// settleEnv is a leading relay with a Settler (acks) on a fresh database
// and stream, whose rounds run on Wake and after their settle tick.
type settleEnv struct {
	s    *store.Store
	js   jetstream.JetStream
	chat string
	a    *acks
	r    *stream.Relay
	o    *handOutbox
	reg  *prometheus.Registry
}

func newSettleEnv(t *testing.T, wait time.Duration) *settleEnv {
	t.Helper()
	e := &settleEnv{s: mustStore(t, testpg.NewDatabase(t)), a: newAcks()}
	_, e.js = mustInProcessJS(t)
	e.chat = mustChat(t, e.s)
	e.r, e.o, e.reg = handRelay(t, e.s, e.js, stream.RelayConfig{Settler: e.a, SettleWait: wait})
	return e
}

// Settled messages never reach the stream; the others are published in
// order once their wait is over; every row leaves the outbox, and the relay
// tells the Settler it is done with each message exactly once.
func TestRelayKeepsSettledMessagesOutOfTheStream(t *testing.T) {
	e := newSettleEnv(t, 300*time.Millisecond)
	s, js, chat, a, r := e.s, e.js, e.chat, e.a, e.r
	reg := e.reg

	batch := commitBatch(t, s, chat, 0, 10)
	var unsettled []store.Accepted
	for i, b := range batch {
		if i%2 == 0 {
			a.settle(b)
		} else {
			unsettled = append(unsettled, b)
		}
	}
	start := time.Now()
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("unsettled messages published after %v, before their 300ms wait", took)
	}
	wantStream(t, js, outboxIDs(unsettled))
	if got := metric(t, reg, "chatd_relay_settled_total"); got != 5 {
		t.Fatalf("chatd_relay_settled_total %v, want 5", got)
	}
	if got := metric(t, reg, "chatd_relay_published_total"); got != 5 {
		t.Fatalf("chatd_relay_published_total %v, want 5", got)
	}
	skipped, published := a.forgotten()
	if want := messageIDs(batch); !slices.Equal(slices.Sorted(slices.Values(append(skipped, published...))), want) {
		t.Fatalf("forgotten %v and %v, want every message once: %v", skipped, published, want)
	}
	if !slices.Equal(published, messageIDs(unsettled)) {
		t.Fatalf("forgotten as published %v, want the unsettled %v", published, messageIDs(unsettled))
	}
}

// With TakenPrefix, settled messages are published too, in outbox order:
// those every recipient took live under TakenPrefix (which live delivery
// does not read), the others under the usual subject with the unsettled
// ones; the relay tells the Settler the taken ones as skipped (no stream
// delivery comes to live delivery for them).
func TestRelayPublishesTakenMessagesApart(t *testing.T) {
	s, a := mustStore(t, testpg.NewDatabase(t)), newAcks()
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	const takenPrefix = stream.SubjectPrefix + "taken."
	r, _, reg := handRelay(t, s, js, stream.RelayConfig{Settler: a, SettleWait: 200 * time.Millisecond, TakenPrefix: takenPrefix})

	batch := commitBatch(t, s, chat, 0, 9)
	var took, others []store.Accepted
	for i, b := range batch {
		switch i % 3 {
		case 0:
			a.take(b)
			took = append(took, b)
		case 1:
			a.settle(b)
			others = append(others, b)
		default:
			others = append(others, b)
		}
	}
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, outboxIDs(batch))
	str, err := js.Stream(context.Background(), stream.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range batch {
		raw, err := str.GetMsg(context.Background(), uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		want := stream.SubjectPrefix + chat
		if i%3 == 0 {
			want = takenPrefix + chat
		}
		if raw.Subject != want {
			t.Errorf("message %d (%s): subject %s, want %s", i, b.Message.ID, raw.Subject, want)
		}
	}
	if got := metric(t, reg, "chatd_relay_settled_total"); got != 3 {
		t.Errorf("chatd_relay_settled_total %v, want 3 (the taken)", got)
	}
	skipped, published := a.forgotten()
	if !slices.Equal(skipped, messageIDs(took)) || !slices.Equal(published, messageIDs(others)) {
		t.Fatalf("forgotten as skipped %v and published %v, want the taken %v and the others %v",
			skipped, published, messageIDs(took), messageIDs(others))
	}
}

// A message whose recipients ack within the wait is not published even
// though the relay saw it unsettled first; the rows behind a waiting one
// wait too, so the stream stays in outbox order.
func TestRelayWaitsForAcksBeforePublishing(t *testing.T) {
	e := newSettleEnv(t, 2*time.Second)
	s, js, chat, a, r := e.s, e.js, e.chat, e.a, e.r

	batch := commitBatch(t, s, chat, 0, 3)
	r.Offer(batch)
	r.Wake()
	time.Sleep(400 * time.Millisecond) // rounds ran and found nothing settled
	if got := outboxDepth(t, s); got != 3 {
		t.Fatalf("outbox depth %d during the wait, want 3", got)
	}
	wantStream(t, js, nil)
	a.settle(batch[0], batch[2])
	testwait.For(t, 2*time.Second, "the settled first row to go", func() bool { return outboxDepth(t, s) == 2 })
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, outboxIDs(batch[1:2]))
}

// Rows the relay was not handed (another node's, or over the hold) have no
// wait: unless settled they are published at once, as without a Settler.
func TestRelayPublishesRowsItWasNotHandedWithoutWaiting(t *testing.T) {
	e := newSettleEnv(t, time.Hour)
	s, js, chat, a, r := e.s, e.js, e.chat, e.a, e.r

	batch := commitBatch(t, s, chat, 0, 4)
	a.settle(batch[3])
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, outboxIDs(batch[:3]))
}

// A delete that fails after the decision (the relay killed between the two)
// leaves the settled rows in the outbox; the next round keeps them out of
// the stream again, and the Settler hears of each once, after its delete.
func TestRelaySkipsSettledRowsAgainAfterAFailedDelete(t *testing.T) {
	e := newSettleEnv(t, time.Hour)
	s, js, chat, a, r := e.s, e.js, e.chat, e.a, e.r
	o := e.o
	reg := e.reg

	o.failDelete.Store(1)
	batch := commitBatch(t, s, chat, 0, 6)
	a.settle(batch...)
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, nil)
	if got := metric(t, reg, "chatd_relay_settled_total"); got != 6 {
		t.Fatalf("chatd_relay_settled_total %v, want 6", got)
	}
	if skipped, published := a.forgotten(); !slices.Equal(skipped, messageIDs(batch)) || len(published) != 0 {
		t.Fatalf("forgotten as skipped %v and as published %v, want every message skipped once", skipped, published)
	}
}

// A row the relay published but could not delete (killed between the two)
// is published again even if its message has settled since: its first
// stream delivery may still come, and push must keep the fast entries that
// stop it from sending the frame twice (Forget as published).
func TestRelayNeverSkipsARowItHasPublished(t *testing.T) {
	e := newSettleEnv(t, time.Millisecond)
	s, js, chat, a, r := e.s, e.js, e.chat, e.a, e.r
	o := e.o
	reg := e.reg

	// Two deletes fail: the second retry comes at least 60 ms (backoff)
	// after the first failure, long after the settle below.
	o.failDelete.Store(2)
	batch := commitBatch(t, s, chat, 0, 4)
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "the first delete to fail", func() bool { return o.failDelete.Load() <= 1 })
	a.settle(batch...) // every recipient acked while the rows stayed
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, outboxIDs(batch))
	if got := metric(t, reg, "chatd_relay_settled_total"); got != 0 {
		t.Fatalf("chatd_relay_settled_total %v, want 0: published rows were skipped", got)
	}
	if skipped, published := a.forgotten(); len(skipped) != 0 || !slices.Equal(published, messageIDs(batch)) {
		t.Fatalf("forgotten as skipped %v and as published %v, want every message as published", skipped, published)
	}
}

// A row published under the taken subjects but not deleted (killed between
// the two) is published again under them, whatever its message's state now:
// a second copy under the usual subject would be dropped by the stream's
// duplicate window, and live delivery then told to wait for a stream
// delivery that never comes.
func TestRelayRepublishesATakenRowUnderItsSubject(t *testing.T) {
	s, a := mustStore(t, testpg.NewDatabase(t)), newAcks()
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	const takenPrefix = stream.SubjectPrefix + "taken."
	r, o, _ := handRelay(t, s, js, stream.RelayConfig{Settler: a, SettleWait: time.Hour, TakenPrefix: takenPrefix})

	o.failDelete.Store(1)
	batch := commitBatch(t, s, chat, 0, 3)
	a.take(batch...)
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "the delete to fail", func() bool { return o.failDelete.Load() == 0 })
	a.mu.Lock()
	clear(a.taken) // taken no more, were it asked
	a.mu.Unlock()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, outboxIDs(batch))
	str, err := js.Stream(context.Background(), stream.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(context.Background(), jetstream.WithSubjectFilter(takenPrefix+">"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects[takenPrefix+chat]; got != 3 {
		t.Fatalf("%d messages under %s%s, want the 3 taken ones (subjects %v)", got, takenPrefix, chat, info.State.Subjects)
	}
	if skipped, published := a.forgotten(); !slices.Equal(skipped, messageIDs(batch)) || len(published) != 0 {
		t.Fatalf("forgotten as skipped %v and as published %v, want the taken ones as skipped", skipped, published)
	}
}
