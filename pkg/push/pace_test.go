package push_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/prometheus/client_golang/prometheus"
)

// metricValue reads the value of the sample of metric name whose labels include
// the label pairs given (name, value, ...), or fails.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return testmetric.Value(t, reg, name, labels...)
}

func ids(ms []chatd.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// A burst beyond a connection's budget is held for it and sent as it acks,
// oldest first: the client that acks what it gets is never closed, gets
// each message once, and the stream messages are acked as it goes.
func TestBurstBeyondBudgetIsPacedNotClosed(t *testing.T) {
	e := mustEnv(t)
	reg := prometheus.NewRegistry()
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second; c.MaxPending = 2; c.Registerer = reg })
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	var sent []chatd.Message
	var last uint64
	for range 5 {
		m, seq := e.publish(t, "alice", "web", "bob")
		sent, last = append(sent, m), seq
	}
	testwait.Until(t, "the burst handled", func() bool { return bob.closedWith() != 0 || r.InFlight() == 5 })
	if got := bob.closedWith(); got != 0 {
		t.Fatalf("bob closed with %v by a burst over his budget, want him paced", got)
	}
	if got := len(bob.received()); got != 2 {
		t.Fatalf("bob got %d frames of the burst, want 2 (his budget)", got)
	}
	if got := metricValue(t, reg, "chatd_push_held"); got != 3 {
		t.Fatalf("chatd_push_held %v during the burst, want 3", got)
	}
	for n := 2; n < 5; n += 2 {
		r.Ack(bob, ids(bob.received()[n-2:n]))
		want := min(n+2, 5)
		testwait.Until(t, "held messages released by the acks", func() bool { return len(bob.received()) == want })
	}
	r.Ack(bob, ids(bob.received()[4:]))
	testwait.Until(t, "every stream message acked", func() bool { return ackFloor(t, e, "a") == last })
	if got := ids(bob.received()); !slices.Equal(got, ids(sent)) {
		t.Fatalf("bob got %v, want each message once in order %v", got, ids(sent))
	}
	if got := bob.closedWith(); got != 0 {
		t.Fatalf("bob closed with %v, want open", got)
	}
	held, paced := metricValue(t, reg, "chatd_push_held"), metricValue(t, reg, "chatd_push_paced_total", "path", "stream")
	released := metricValue(t, reg, "chatd_push_delivered_frames_total", "path", "released")
	if held != 0 || paced != 3 || released != 3 {
		t.Fatalf("held %v, paced %v, released %v after the burst; want 0, 3, 3", held, paced, released)
	}
}

// docs/architecture.md, invariant 2, with pacing: a message held for a
// connection (not sent yet) is one it has not acked, so its pin and the
// node's ack floor stay below it however the other recipients ack.
func TestHeldMessagePinsTheFloor(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second; c.MaxPending = 1 })
	gc := mustReclaimer(t, e, r)
	bob := &recConn{user: "bob", device: "phone"}
	carol := &recConn{user: "carol", device: "web"}
	r.Attach(bob)
	r.Attach(carol)
	m1, s1 := e.publish(t, "alice", "web", "bob", "carol")
	testwait.Until(t, "carol's first", func() bool { return len(carol.received()) == 1 })
	r.Ack(carol, []string{m1.ID})
	m2, s2 := e.publish(t, "alice", "web", "bob", "carol")
	testwait.Until(t, "carol's second", func() bool { return len(carol.received()) == 2 })
	r.Ack(carol, []string{m2.ID})
	if got := len(bob.received()); got != 1 {
		t.Fatalf("bob got %d frames, want 1: the second is held for him", got)
	}
	r.Ack(bob, []string{m1.ID})
	testwait.Until(t, "bob's held message released", func() bool { return len(bob.received()) == 2 })
	if pins := r.Pins(); len(pins) != 1 || pins[0].Seq != s2 {
		t.Fatalf("pins: got %+v, want bob at %d", pins, s2)
	}
	testwait.Until(t, "ack floor at the first", func() bool { return ackFloor(t, e, "a") == s1 })
	snap, err := gc.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor > s2 || !streamHas(t, e, s2) {
		t.Fatalf("floor %d passed bob's un-acked %d", snap.Floor, s2)
	}
	if got := bob.closedWith(); got != 0 {
		t.Fatalf("bob closed with %v, want open", got)
	}
}

// A connection at its budget that stops acking is still abandoned by the
// attempts reaper (4000), not kept forever by its held messages, and the
// held messages are never sent to it.
func TestStoppedClientAtBudgetIsAbandoned(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.MaxPending = 1 }) // lease 300 ms, 2 attempts
	gc := mustReclaimer(t, e, r)
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	m1, _ := e.publish(t, "alice", "web", "bob")
	e.publish(t, "alice", "web", "bob")
	_, s3 := e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "bob closed", func() bool { return bob.closedWith() != 0 })
	if got := bob.closedWith(); got != push.ReasonAbandoned {
		t.Fatalf("bob closed with %v, want abandoned", got)
	}
	for _, m := range bob.received() {
		if m.ID != m1.ID {
			t.Fatalf("bob was sent %s, held behind his un-acked %s", m.ID, m1.ID)
		}
	}
	testwait.Until(t, "floor past the burst", func() bool {
		snap, err := gc.Collect(context.Background())
		return err == nil && snap.Floor == s3+1
	})
}

// The fast path keeps to the budget too: a connection at it gets no fast
// frame, and the message reaches it from the stream once it acks.
func TestFastPathKeepsToTheBudget(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second; c.MaxPending = 2 })
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	var ms []chatd.Message
	for range 3 {
		m := e.newMsg("alice")
		m.Device = "web"
		r.FastPath(&m, []string{"alice", "bob"})
		ms = append(ms, m)
	}
	if got := len(bob.received()); got != 2 {
		t.Fatalf("bob got %d fast frames, want 2 (his budget)", got)
	}
	_, seq := e.publishMsg(t, ms[2], "web", "alice", "bob")
	testwait.Until(t, "the third held", func() bool { return len(r.Pins()) == 1 })
	if got := len(bob.received()); got != 2 {
		t.Fatalf("bob got %d frames, want 2: the third is held until he acks", got)
	}
	r.Ack(bob, []string{ms[0].ID})
	testwait.Until(t, "the third released", func() bool { return len(bob.received()) == 3 })
	r.Ack(bob, []string{ms[2].ID})
	testwait.Until(t, "stream message acked", func() bool { return ackFloor(t, e, "a") == seq })
	if got := ids(bob.received()); !slices.Equal(got, ids(ms)) {
		t.Fatalf("bob got %v, want %v", got, ids(ms))
	}
}
