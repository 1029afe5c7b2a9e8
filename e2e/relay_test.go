package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// stallingOutbox is the real store with one fault injected: the relay's
// first delete never happens (it blocks until the relay is killed), so the
// rows it has just published stay in the PostgreSQL outbox. Until open is
// closed it also hides the outbox, so that one round carries every row.
type stallingOutbox struct {
	*store.Store
	open    chan struct{} // closed: ReadOutbox sees the rows
	locked  chan struct{} // closed once this relay holds the relay lock
	publish chan []int64  // the ids of the stalled delete
	once    sync.Once     // guards locked
	stalled sync.Once     // the first delete stalls, later ones pass
}

func (o *stallingOutbox) ReadOutbox(ctx context.Context, limit int) ([]store.OutboxEntry, error) {
	select {
	case <-o.open:
		return o.Store.ReadOutbox(ctx, limit)
	default:
		return nil, nil
	}
}

func (o *stallingOutbox) TryRelayLock(ctx context.Context) (*store.RelayLock, bool, error) {
	lock, held, err := o.Store.TryRelayLock(ctx)
	if held {
		o.once.Do(func() { close(o.locked) })
	}
	return lock, held, err
}

func (o *stallingOutbox) DeleteOutbox(ctx context.Context, ids []int64) (int64, error) {
	first := false
	o.stalled.Do(func() { first = true })
	if !first {
		return o.Store.DeleteOutbox(ctx, ids)
	}
	o.publish <- append([]int64(nil), ids...)
	<-ctx.Done() // killed between publish and delete
	return 0, ctx.Err()
}

// A relay killed after the stream acked its publish but before it deleted
// the rows loses nothing and duplicates nothing: the relay that takes over
// republishes the rows with the same Nats-Msg-Id, the stream's duplicate
// window drops the copies, and an acking client sees each id once.
func TestRelayKilledBetweenPublishAndDelete(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	st, err := store.Open(ctx, dsn, store.Config{Logger: testLogger()})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Ensure(ctx, js, stream.Config{}); err != nil {
		t.Fatalf("ensure stream: %v", err)
	}
	faulty := &stallingOutbox{Store: st, open: make(chan struct{}), locked: make(chan struct{}), publish: make(chan []int64, 1)}
	doomed, err := stream.NewRelay(stream.RelayConfig{Outbox: faulty, JS: js, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	relayCtx, kill := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		_ = doomed.Run(relayCtx) // Run returns nil once its context ends
	}()
	t.Cleanup(func() { kill(); <-relayDone })
	select {
	case <-faulty.locked:
	case <-time.After(10 * time.Second):
		t.Fatal("the fault-injected relay never took the relay lock")
	}

	// The node's own relay now stands by. GC is slow so the stream keeps
	// every message for counting, and --settle off publishes every one.
	rn := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "n1", node.Config{Settle: node.SettleOff, Reclaim: reclaim.Config{Interval: time.Hour}}))
	alice := mustPeer(t, rn.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	bob := mustPeer(t, rn.URL(), "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	bob.waitConnected(t, 1)

	const n = 10
	first := alice.sendN(t, chat, "m", n, 0)
	if got := rn.outboxDepth(t); got != n {
		t.Fatalf("outbox depth %d before the relay ran, want %d", got, n)
	}
	close(faulty.open)
	doomed.Wake()
	var published []int64
	select {
	case published = <-faulty.publish:
	case <-time.After(10 * time.Second):
		t.Fatal("the fault-injected relay never reached its delete")
	}
	if len(published) != n {
		t.Fatalf("one relay round published %d rows, want %d", len(published), n)
	}
	if msgs, last := rn.streamState(t); msgs != n || last != n {
		t.Fatalf("stream holds %d messages (last seq %d) after the publish, want %d", msgs, last, n)
	}
	if got := rn.outboxDepth(t); got != n {
		t.Fatalf("outbox depth %d after publish without delete, want %d", got, n)
	}

	kill()
	select {
	case <-relayDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed relay did not stop")
	}
	testwait.For(t, 10*time.Second, "the node's relay takes over", func() bool { return rn.metric(t, "chatd_relay_active") == 1 })
	testwait.For(t, 10*time.Second, "the republished rows leave the outbox", func() bool { return rn.outboxDepth(t) == 0 })
	if msgs, last := rn.streamState(t); msgs != n || last != n {
		t.Fatalf("stream holds %d messages (last seq %d) after the republish, want %d: the duplicate window let a copy in", msgs, last, n)
	}

	// Delivery goes on through the new relay.
	second := alice.sendN(t, chat, "after", 5, 0)
	testwait.For(t, 10*time.Second, "the new relay publishes", func() bool { _, last := rn.streamState(t); return last == n+5 })
	bob.reconcile(t, chat, 1, idsAfter(0, first, second), 10*time.Second)
	waitConsumerDone(t, js, rn, n+5)
	if st := bob.c.Stats(); st.MsgFrames != n+5 || st.DuplicateFrames != 0 {
		t.Fatalf("the acking client got %d msg frames (%d duplicates) for %d messages: want each id once (stats %+v)",
			st.MsgFrames, st.DuplicateFrames, n+5, st)
	}
}

// waitConsumerDone waits until the node's consumer has acked the stream up
// to last, so every delivery it will ever make has been made.
func waitConsumerDone(t *testing.T, js jetstream.JetStream, rn *runningNode, last uint64) {
	t.Helper()
	testwait.For(t, 15*time.Second, "the node's consumer acks the whole stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, stream.DefaultName, "push-"+rn.NodeID())
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.AckFloor.Stream >= last && info.NumAckPending == 0
	})
}
