package push_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/push"
)

// settleRegistry is a running registry that keeps the fast path's account
// (Config.Settle), with a lease longer than any of these tests.
func settleRegistry(t *testing.T) (*env, *push.Registry) {
	t.Helper()
	e := mustEnv(t)
	return e, mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second; c.Settle = true })
}

// attachAll registers conns with r.
func attachAll(t *testing.T, r *push.Registry, conns ...*recConn) {
	t.Helper()
	for _, c := range conns {
		if err := r.Attach(c); err != nil {
			t.Fatal(err)
		}
	}
}

// A message is settled only once every connection the fast path handed it
// to has acked it; a withdrawn connection counts as done (it resyncs from
// history). Until then the relay must publish it.
func TestSettledNeedsEveryFastPathRecipient(t *testing.T) {
	e, r := settleRegistry(t)
	bob := &recConn{user: "bob", device: "phone"}
	bobWeb := &recConn{user: "bob", device: "web"}
	carol := &recConn{user: "carol", device: "phone"}
	attachAll(t, r, bob, bobWeb, carol)
	m := e.newMsg("alice")
	if r.Settled(m.ID) {
		t.Fatal("settled before the fast path ran")
	}
	r.FastPath(&m, []string{"alice", "bob", "carol"})
	if r.Settled(m.ID) {
		t.Fatal("settled with no ack")
	}
	r.Ack(bob, []string{m.ID})
	r.Ack(bob, []string{m.ID}) // a repeated ack counts once
	if r.Settled(m.ID) {
		t.Fatal("settled with bob/web and carol not acked")
	}
	r.Ack(carol, []string{m.ID})
	if r.Settled(m.ID) {
		t.Fatal("settled with bob/web not acked")
	}
	r.Detach(bobWeb) // left live delivery: it reads the message from history
	if !r.Settled(m.ID) {
		t.Fatal("not settled after every recipient acked or left")
	}
	r.Forget([]string{m.ID}, nil)
	if local, fast := r.Tracked(); local != 0 || fast != 0 {
		t.Fatalf("after Forget of a settled message: %d accounts, %d fast entries left, want none", local, fast)
	}
	if r.Settled(m.ID) {
		t.Fatal("a forgotten message still reads settled")
	}
}

// A registered recipient whose queue refused the frame gets it only from
// the stream: the message never reads settled, whatever the others do.
func TestMissedRecipientNeverSettles(t *testing.T) {
	e, r := settleRegistry(t)
	bob := &recConn{user: "bob", device: "phone"}
	full := &recConn{user: "carol", device: "phone"}
	attachAll(t, r, bob, full)
	full.Close(push.ReasonOverloaded) // its Deliver now refuses, as a full queue does
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob", "carol"})
	r.Ack(bob, []string{m.ID})
	if r.Settled(m.ID) {
		t.Fatal("settled though carol's connection never got the frame")
	}
}

// A message the relay published keeps its fast entries through Forget, even
// once every recipient acked: its stream delivery neither sends the frame
// again nor waits for the ack that already came.
func TestForgetKeepsFastEntriesOfAPublishedMessage(t *testing.T) {
	e, r := settleRegistry(t)
	bob := &recConn{user: "bob", device: "phone"}
	carol := &recConn{user: "carol", device: "phone"}
	attachAll(t, r, bob, carol)
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob", "carol"})
	r.Ack(bob, []string{m.ID})
	// The relay published it (carol had not acked), and carol acked after
	// the relay's last look: it is settled now, but its stream delivery is
	// on the way.
	r.Ack(carol, []string{m.ID})
	r.Forget(nil, []string{m.ID})
	_, seq := e.publishMsg(t, m, "web", "alice", "bob", "carol")
	waitFor(t, "stream message acked", func() bool { return ackFloor(t, e, "a") == seq })
	if len(bob.received()) != 1 || len(carol.received()) != 1 {
		t.Fatalf("frames: bob %d carol %d, want 1 1 (the stream delivery re-sent)", len(bob.received()), len(carol.received()))
	}
}

// Without Config.Settle the registry keeps no account: nothing reads
// settled, so a relay given it by mistake publishes everything.
func TestNoSettleKeepsNoAccount(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	bob := &recConn{user: "bob", device: "phone"}
	attachAll(t, r, bob)
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob"})
	r.Ack(bob, []string{m.ID})
	if r.Settled(m.ID) {
		t.Fatal("settled without Config.Settle")
	}
	if local, _ := r.Tracked(); local != 0 {
		t.Fatalf("%d accounts kept without Config.Settle", local)
	}
}
