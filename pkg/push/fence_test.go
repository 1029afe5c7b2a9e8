package push_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
)

// Settling across nodes, the leading node fences a peer the cluster's
// presence takes for dead: one whose heartbeat was live at a listing that
// found its consumer, and then stayed lapsed in a current view for
// FenceAfter. It deletes the consumer and settles without the peer's
// reports. A peer never seen alive
// (a presence of another layout), or one whose heartbeat looks lapsed in a
// view that is not current (a stalled watch), keeps its consumer, and the
// messages wait for its reports.
// deadPeer is node a, settling across nodes with a fence of FenceAfter,
// and the consumer node b left on the stream when it was killed; presence
// sets both nodes' PeerAlive and PeerLapsed.
type deadPeer struct {
	e   *env
	a   *push.Registry
	cfg push.Config // b's, to run it again
}

func newDeadPeer(t *testing.T, e *env, fenceAfter time.Duration, presence func(*push.Config)) *deadPeer {
	t.Helper()
	peers := func(c *push.Config) {
		c.Lease, c.Settle, c.Peers, c.Conn = 10*time.Second, true, true, e.js.Conn()
		push.ListByHand(c)
		c.FastSubject, c.SettledPrefix, c.SkippedSubject = "f.settle.shared", "f.settle.done.", "f.settle.skipped"
		c.FenceAfter = fenceAfter
		presence(c)
	}
	d := &deadPeer{e: e, a: mustRegistry(t, e, "a", peers), cfg: push.Config{NodeID: "b", JS: e.js, Stream: stream.DefaultName}}
	peers(&d.cfg)
	d.bBack(t)() // stopped at once, its consumer left behind: a killed node
	return d
}

// bListed reports whether b's consumer is on the stream.
func (d *deadPeer) bListed() bool {
	_, err := d.e.js.Consumer(context.Background(), stream.DefaultName, push.ConsumerName("b"))
	return err == nil
}

// bBack runs b again under its id, its consumer made again if fenced.
func (d *deadPeer) bBack(t *testing.T) (stop func()) {
	t.Helper()
	b, err := push.New(d.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return runRegistry(t, d.e, b, "b")
}

func TestDeadPeerFenced(t *testing.T) {
	e := mustEnv(t)
	const fenceAfter = 2 * time.Second
	var mu sync.Mutex
	bAlive, current := false, true
	set := func(alive, cur bool) {
		mu.Lock()
		bAlive, current = alive, cur
		mu.Unlock()
	}
	d := newDeadPeer(t, e, fenceAfter, func(c *push.Config) {
		c.PeerAlive = func(node string) (bool, bool) {
			mu.Lock()
			defer mu.Unlock()
			return node == "b" && bAlive, current
		}
	})
	a, bListed := d.a, d.bListed
	a.Lead(true)

	m := e.newMsg("alice")
	a.FastPath(&m, []string{"alice", "carol"}) // nobody connected: settled on a at once
	// Two listings: b, not seen alive, is fenced by neither.
	for range 2 {
		if settled(t, a, m.ID) || !bListed() {
			t.Fatalf("b never seen alive: m settled or b's consumer deleted (listed %v)", bListed())
		}
	}
	set(true, true)
	if settled(t, a, m.ID) {
		t.Fatal("m settled while b, alive, has not reported it")
	}
	set(false, false)
	if settled(t, a, m.ID) || !bListed() {
		t.Fatalf("b's heartbeat lapsed in a view that is not current: m settled or b's consumer deleted (listed %v)", bListed())
	}
	set(false, true)
	if settled(t, a, m.ID) || !bListed() {
		t.Fatalf("b's heartbeat just found lapsed: m settled or b's consumer deleted before FenceAfter (listed %v)", bListed())
	}
	// A heartbeat late now and then (a node refreshing near the TTL) is
	// live again before FenceAfter: the wait starts over.
	time.Sleep(fenceAfter * 6 / 10)
	set(true, true)
	settled(t, a, m.ID)
	set(false, true)
	settled(t, a, m.ID)
	time.Sleep(fenceAfter * 6 / 10)
	if settled(t, a, m.ID) || !bListed() {
		t.Fatalf("b lapsed twice, each time for less than FenceAfter: m settled or b's consumer deleted (listed %v)", bListed())
	}
	time.Sleep(fenceAfter / 2)
	if !settled(t, a, m.ID) {
		t.Fatal("m not settled after b, seen alive, was taken for dead for FenceAfter")
	}
	if bListed() {
		t.Fatal("b's consumer still on the stream after b was taken for dead")
	}

	// b back under its id: its consumer is made before its heartbeat is
	// live, and a fenced node is seen anew, so it is not fenced again.
	d.bBack(t)
	m2 := e.newMsg("alice")
	a.FastPath(&m2, []string{"alice", "carol"})
	if settled(t, a, m2.ID) || !bListed() {
		t.Fatalf("b back, its heartbeat not yet live: m2 settled or b's consumer deleted again (listed %v)", bListed())
	}
}

// A peer that died before this node led was never seen alive in its
// listings; the presence saw its heartbeat lapse (PeerLapsed), and the
// first listing after the lead counts it as seen alive until then: fenced
// once its lapse is FenceAfter old. Only that first listing seeds, so the
// peer's consumer, back while its heartbeat is still not live, is not
// fenced again at the next listings.
func TestPeerDeadBeforeTheLeadFenced(t *testing.T) {
	e := mustEnv(t)
	const fenceAfter = 2 * time.Second
	lapsedAt := time.Now().Add(-2 * fenceAfter)
	d := newDeadPeer(t, e, fenceAfter, func(c *push.Config) {
		c.PeerAlive = func(string) (bool, bool) { return false, true }
		c.PeerLapsed = func(node string) (time.Time, bool) { return lapsedAt, node == "b" }
	})
	a, bListed := d.a, d.bListed

	a.Lead(true)
	m := e.newMsg("alice")
	a.FastPath(&m, []string{"alice", "carol"}) // nobody connected: settled on a at once
	if !settled(t, a, m.ID) {
		t.Fatal("m not settled at the first listing after the lead, b dead for twice FenceAfter")
	}
	if bListed() {
		t.Fatal("b's consumer still on the stream: a dead peer the presence saw lapse was not fenced")
	}

	d.bBack(t) // back, its heartbeat not yet live
	m2 := e.newMsg("alice")
	a.FastPath(&m2, []string{"alice", "carol"})
	for range 2 {
		if settled(t, a, m2.ID) || !bListed() {
			t.Fatalf("b back, its heartbeat not yet live: m2 settled or b's consumer deleted again (listed %v)", bListed())
		}
	}
}
