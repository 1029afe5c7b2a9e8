package stream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/prometheus/client_golang/prometheus"
)

// listenedOutbox is the real store, telling when its listener connected and
// counting the relay's outbox reads, so a test can wait until the relay is
// idle: the listener's connect wakes the relay, and that round must not be
// mistaken for one woken by a commit.
type listenedOutbox struct {
	countedReads
	connected chan struct{}
	once      sync.Once
}

func (o *listenedOutbox) ListenOutbox(ctx context.Context, wake func(string)) error {
	return o.Store.ListenOutbox(ctx, func(node string) {
		wake(node)
		if node == "" {
			o.once.Do(func() { close(o.connected) })
		}
	})
}

// waitIdle waits until the relay leads, its listener is connected, and no
// outbox read happened for 200 ms.
func (o *listenedOutbox) waitIdle(t *testing.T, r *stream.Relay) {
	t.Helper()
	testwait.For(t, 5*time.Second, "relay active", r.Active)
	select {
	case <-o.connected:
	case <-time.After(5 * time.Second):
		t.Fatal("outbox listener did not connect")
	}
	last, since := o.reads.Load(), time.Now()
	testwait.For(t, 5*time.Second, "relay idle", func() bool {
		if n := o.reads.Load(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 200*time.Millisecond
	})
}

// The notification of a commit by the relay's own node does not start a
// round: that node hands the rows over (Offer) and wakes the relay itself,
// and a round started by the notification, which often arrives first, read
// the rows back from PostgreSQL. Another node's commit still wakes it.
func TestRelayLeavesItsOwnNodesCommitsToTheHandOff(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	open := func(node string) *store.Store {
		t.Helper()
		s, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet, NodeID: node})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	own, other := open("n1"), open("n2")
	_, js := mustInProcessJS(t)
	chat := mustChat(t, own)
	reg := prometheus.NewRegistry()
	o := &listenedOutbox{countedReads: countedReads{Store: own}, connected: make(chan struct{})}
	// Only a notification or Wake can start a round: the poll is an hour.
	r, _ := startRelay(t, stream.RelayConfig{Outbox: o, JS: js, NodeID: "n1", Registerer: reg,
		Poll: time.Hour, Standby: 100 * time.Millisecond})
	o.waitIdle(t, r)

	batch := commitBatch(t, own, chat, 0, 20)
	// The notification reaches the listener within milliseconds.
	time.Sleep(500 * time.Millisecond)
	if got := outboxDepth(t, own); got != 20 {
		t.Fatalf("outbox depth before the hand-off: got %d, want 20 (a round ran on this node's own notification)", got)
	}
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "own batch relayed", func() bool { return outboxDepth(t, own) == 0 })
	if mem, table := rows(t, reg, "memory"), rows(t, reg, "table"); mem != 20 || table != 0 {
		t.Fatalf("rows: %v from memory and %v from the table, want 20 and 0", mem, table)
	}

	commitBatch(t, other, chat, 100, 5)
	testwait.For(t, 5*time.Second, "another node's batch relayed on its notification", func() bool { return outboxDepth(t, own) == 0 })
	if got := rows(t, reg, "table"); got != 5 {
		t.Fatalf("rows from the table: got %v, want another node's 5", got)
	}
}
