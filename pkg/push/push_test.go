package push_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
)

func ackFloor(t *testing.T, e *env, node string) uint64 {
	t.Helper()
	c, err := e.js.Consumer(context.Background(), stream.DefaultName, push.ConsumerName(node))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.AckFloor.Stream
}

// docs/architecture.md, invariant 2: ack 3 while 1 is pending → the pin stays
// at 1 and the purge never passes it; acking 1 lets the floor rise exactly to
// the next gap.
func TestOutOfOrderAckKeepsPinAndPurgeBelowIt(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	gc := mustReclaimer(t, e, r)
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	m1, s1 := e.publish(t, "alice", "web", "alice", "bob")
	m2, s2 := e.publish(t, "alice", "web", "alice", "bob")
	m3, s3 := e.publish(t, "alice", "web", "alice", "bob")
	testwait.Until(t, "3 deliveries", func() bool { return len(bob.received()) == 3 })

	r.Ack(bob, []string{m3.ID})
	if pins := r.Pins(); len(pins) != 1 || pins[0].Seq != s1 {
		t.Fatalf("pins after acking the third: got %+v, want bob at %d", pins, s1)
	}
	snap, err := gc.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor > s1 || !streamHas(t, e, s1) {
		t.Fatalf("floor %d passed the pending sequence %d (still in stream: %v)", snap.Floor, s1, streamHas(t, e, s1))
	}

	r.Ack(bob, []string{m1.ID})
	if pins := r.Pins(); len(pins) != 1 || pins[0].Seq != s2 {
		t.Fatalf("pins after acking the first: got %+v, want bob at %d", pins, s2)
	}
	testwait.Until(t, "ack floor at the first", func() bool { return ackFloor(t, e, "a") == s1 })
	if snap, err = gc.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if snap.Floor != s2 || streamHas(t, e, s1) || !streamHas(t, e, s2) || !streamHas(t, e, s3) {
		t.Fatalf("floor %d: want %d with only %d purged", snap.Floor, s2, s1)
	}

	r.Ack(bob, []string{m2.ID})
	testwait.Until(t, "ack floor at the last", func() bool { return ackFloor(t, e, "a") == s3 })
	if snap, err = gc.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if snap.Floor != s3+1 || streamHas(t, e, s3) {
		t.Fatalf("after every ack: floor %d, want %d and an empty stream", snap.Floor, s3+1)
	}
	if got := len(bob.received()); got != 3 {
		t.Fatalf("bob got %d frames, want 3 (no re-sends while acking)", got)
	}
}

// A stuck client pins the floor; its abandon (after the last attempt's lease)
// closes it with ReasonAbandoned and lets the floor rise. Nothing is acked on
// its behalf before that.
func TestStuckClientPinsFloorUntilAbandoned(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", nil) // lease 300 ms, 2 attempts
	gc := mustReclaimer(t, e, r)
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	_, s1 := e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "first delivery", func() bool { return len(bob.received()) >= 1 })
	snap, err := gc.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor > s1 || !streamHas(t, e, s1) {
		t.Fatalf("stuck client's message purged: floor %d, seq %d", snap.Floor, s1)
	}
	testwait.Until(t, "abandon", func() bool { return bob.closedWith() == push.ReasonAbandoned })
	if got := len(bob.received()); got != 2 {
		t.Fatalf("bob got %d frames before abandon, want 2 (max attempts)", got)
	}
	if pins := r.Pins(); len(pins) != 0 {
		t.Fatalf("pins after abandon: %+v, want none", pins)
	}
	bob.mu.Lock()
	sinceLast := bob.closeAt.Sub(bob.at[len(bob.at)-1])
	bob.mu.Unlock()
	// The lease starts when JetStream sends the attempt; the frame reaches
	// bob (and is timed) only after the consumer's handler ran, so on a
	// loaded box the abandon can come a little under the lease after it
	// (CI saw 298 ms). An abandon that did not wait for the lease comes
	// right after the attempt.
	const lease, handoff = 300 * time.Millisecond, 50 * time.Millisecond
	if sinceLast < lease-handoff {
		t.Fatalf("abandoned %v after the last attempt reached bob, before its %v lease expired", sinceLast, lease)
	}
	// The withdrawal itself acks the message (nobody else waits for it), so
	// the floor rises at once. With MaxDeliver = attempts JetStream used to
	// drop it instead and move the floor only lazily, with the next ack.
	testwait.Until(t, "floor to rise", func() bool {
		snap, err = gc.Collect(context.Background())
		return err == nil && snap.Floor == s1+1
	})
	if streamHas(t, e, s1) {
		t.Fatal("abandoned message still in the stream after collect")
	}
}

// A withdrawal decided against a superseded connection is a no-op and the
// new connection keeps working.
func TestStaleWithdrawAgainstSupersededConnIsNoop(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	old := &recConn{user: "bob", device: "phone"}
	r.Attach(old)
	cur := &recConn{user: "bob", device: "phone"}
	r.Attach(cur)
	if got := old.closedWith(); got != push.ReasonSuperseded {
		t.Fatalf("old conn closed with %v, want superseded", got)
	}
	if r.Withdraw(old, push.ReasonAbandoned) {
		t.Fatal("withdraw of a superseded conn reported success")
	}
	r.Detach(old)
	if got := cur.closedWith(); got != 0 {
		t.Fatalf("current conn closed with %v by a stale verdict", got)
	}
	m, _ := e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "delivery to the current conn", func() bool { return len(cur.received()) == 1 })
	if got := cur.received()[0].ID; got != m.ID {
		t.Fatalf("got %s, want %s", got, m.ID)
	}
	if n := len(old.received()); n != 0 {
		t.Fatalf("superseded conn got %d frames", n)
	}
}

// The hold is bounded: one message more than MaxHeld held for a connection
// withdraws it as overloaded (4001), and drops its pins.
func TestOverloadReaper(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second; c.MaxPending = 1; c.MaxHeld = 2 })
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	for range 3 {
		e.publish(t, "alice", "web", "bob")
	}
	testwait.Until(t, "two held", func() bool { return r.InFlight() == 3 })
	if got := bob.closedWith(); got != 0 {
		t.Fatalf("bob closed with %v holding MaxHeld messages, want open", got)
	}
	e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "overload close", func() bool { return bob.closedWith() == push.ReasonOverloaded })
	if pins := r.Pins(); len(pins) != 0 {
		t.Fatalf("pins after overload withdrawal: %+v", pins)
	}
}

// The purge never passes a node consumer that has not delivered a message
// yet, even when every other node is done with it.
func TestFloorHeldByUndeliveredConsumer(t *testing.T) {
	e := mustEnv(t)
	a := mustRegistry(t, e, "a", nil)
	// Node b creates its consumer, then stops consuming: its consumer stays.
	b, err := push.New(push.Config{NodeID: "b", JS: e.js, Stream: stream.DefaultName})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	testwait.Until(t, "consumer b", func() bool {
		_, err := e.js.Consumer(context.Background(), stream.DefaultName, push.ConsumerName("b"))
		return err == nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, s1 := e.publish(t, "alice", "web", "bob") // nobody on a: acked at once
	testwait.Until(t, "node a done", func() bool { return ackFloor(t, e, "a") == s1 })
	snap, err := mustReclaimer(t, e, a).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor > s1 || !streamHas(t, e, s1) {
		t.Fatalf("purged a message node b has not delivered: floor %d, seq %d", snap.Floor, s1)
	}
}

// The fast path hands the frame over before the stream delivery; a client
// that acked it gets no second frame, and the stream message is acked.
// The sending device is skipped; the sender's other devices receive.
func TestFastPathThenStreamDeliversOnce(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	bob := &recConn{user: "bob", device: "phone"}
	aliceWeb := &recConn{user: "alice", device: "web"}
	alicePhone := &recConn{user: "alice", device: "phone"}
	for _, c := range []*recConn{bob, aliceWeb, alicePhone} {
		r.Attach(c)
	}
	m := e.newMsg("alice")
	m.Device = "web"
	r.FastPath(&m, []string{"alice", "bob"})
	if len(bob.received()) != 1 || len(alicePhone.received()) != 1 || len(aliceWeb.received()) != 0 {
		t.Fatalf("fast path frames: bob %d alice/phone %d alice/web %d, want 1 1 0",
			len(bob.received()), len(alicePhone.received()), len(aliceWeb.received()))
	}
	r.Ack(bob, []string{m.ID})
	_, seq := e.publishMsg(t, m, "web", "alice", "bob")
	// alice/phone has not acked: the stream delivery starts its lease
	// without a second frame; acking it completes the stream message.
	testwait.Until(t, "pin for alice/phone", func() bool { return len(r.Pins()) == 1 })
	r.Ack(alicePhone, []string{m.ID})
	testwait.Until(t, "stream message acked", func() bool { return ackFloor(t, e, "a") == seq })
	if len(bob.received()) != 1 || len(alicePhone.received()) != 1 || len(aliceWeb.received()) != 0 {
		t.Fatalf("after the stream delivery: bob %d alice/phone %d alice/web %d, want 1 1 0",
			len(bob.received()), len(alicePhone.received()), len(aliceWeb.received()))
	}
}

// The relay can publish a message (woken by the commit's NOTIFY) before
// ingest runs the fast path; if the recipient acked the stream delivery in
// the meantime, the late fast path must not send the frame again.
func TestLateFastPathAfterAckedStreamDeliverySendsNothing(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	m := e.newMsg("alice")
	m.Device = "web"
	_, seq := e.publishMsg(t, m, "web", "alice", "bob")
	testwait.Until(t, "stream delivery", func() bool { return len(bob.received()) == 1 })
	r.Ack(bob, []string{m.ID})
	testwait.Until(t, "stream message acked", func() bool { return ackFloor(t, e, "a") == seq })
	r.FastPath(&m, []string{"alice", "bob"})
	if got := len(bob.received()); got != 1 {
		t.Fatalf("bob got %d frames, want 1: the late fast path re-sent an acked message", got)
	}
}

// After the stream's sequences went backwards (JetStream lost its tail or
// the stream was recreated) pins refer to sequences that mean nothing:
// Reset withdraws every connection (they resync from history) and no pin
// survives to hold or mislead the floor.
func TestResetWithdrawsEveryConnectionAndClearsPins(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	bob := &recConn{user: "bob", device: "phone"}
	carol := &recConn{user: "carol", device: "web"}
	r.Attach(bob)
	r.Attach(carol)
	e.publish(t, "alice", "web", "bob", "carol")
	testwait.Until(t, "pins", func() bool { return len(r.Pins()) == 2 })
	r.Reset()
	if pins := r.Pins(); len(pins) != 0 {
		t.Fatalf("pins after reset: %+v, want none", pins)
	}
	for _, c := range []*recConn{bob, carol} {
		if got := c.closedWith(); got != push.ReasonAbandoned {
			t.Fatalf("%s closed with %v after reset, want abandoned (resync from history)", c.user, got)
		}
	}
	if n := r.Connections(); n != 0 {
		t.Fatalf("%d connections registered after reset", n)
	}
	// A new session works normally afterwards.
	dave := &recConn{user: "dave", device: "d"}
	r.Attach(dave)
	e.publish(t, "alice", "web", "dave")
	testwait.Until(t, "delivery after reset", func() bool { return len(dave.received()) == 1 })
}
