package e2e_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/stream"
)

// resumeWithin bounds stream leader elected → the first message sent after
// it delivered live across nodes. Relay and push are meant to resume within
// 1 s; the bound adds the send's own accept-and-deliver
// time on a loaded test machine with the race detector.
const resumeWithin = 3 * time.Second

// Two nodes on a three-server NATS cluster (stream replicas 3); alice on a
// and bob on b talk, so every message crosses the relay, the stream and the
// other node's consumer. The server leading the stream is stopped: live
// delivery must resume soon after another server leads it, and both ends
// must end with every accepted message once, in order. An in-process
// server's Stop is a shutdown that hands its leaderships over, the mild
// case; scripts/failover-bench.sh SIGKILLs a real server's process.
func TestStreamLeaderLostDeliveryResumes(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	nc := testnats.StartCluster(t, 3)
	base := node.Config{Stream: stream.Config{Replicas: 3}}
	a := mustRunNode(t, nodeConfig(dsn, nc.URLs(), "a", base))
	b := mustRunNode(t, nodeConfig(dsn, nc.URLs(), "b", base))

	alice := mustTimedPeer(t, "alice", nil, a.URL(), b.URL())
	chat := alice.mustDirect(t, "bob")
	alice.c.Track(chat)
	bob := mustTimedPeer(t, "bob", []string{chat}, b.URL(), a.URL())
	bob.waitConnected(t, 1)

	stop := make(chan struct{})
	stopOnce := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(stopOnce)
	senders := []*sender{startSender(t, alice, chat, stop), startSender(t, bob, chat, stop)}
	start := time.Now()
	testwait.For(t, 10*time.Second, "live delivery across nodes before the leader is lost", func() bool {
		_, okA := alice.firstLive(start)
		_, okB := bob.firstLive(start)
		return okA && okB
	})

	old := nc.StreamLeader(stream.DefaultName)
	if old < 0 {
		t.Fatal("no server leads the delivery stream")
	}
	nc.Stop(old)
	stopped := time.Now()
	var leader int
	testwait.For(t, 20*time.Second, "another server leads the stream", func() bool {
		leader = nc.StreamLeader(stream.DefaultName)
		return leader >= 0 && leader != old
	})
	elected := time.Now()
	t.Logf("stream leader n%d stopped; n%d leads after %v", old+1, leader+1, elected.Sub(stopped).Round(time.Millisecond))

	var resumed time.Time
	for time.Since(elected) < resumeWithin+5*time.Second && resumed.IsZero() {
		for _, p := range []*timedPeer{alice, bob} {
			if at, ok := p.firstLive(elected); ok && (resumed.IsZero() || at.Before(resumed)) {
				resumed = at
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	switch {
	case resumed.IsZero():
		t.Errorf("no live delivery across nodes within %v of the new stream leader", resumeWithin+5*time.Second)
	case resumed.Sub(elected) > resumeWithin:
		t.Errorf("live delivery resumed %v after the new stream leader, want within %v", resumed.Sub(elected).Round(time.Millisecond), resumeWithin)
	default:
		t.Logf("new stream leader → first live delivery of a message sent after it: %v", resumed.Sub(elected).Round(time.Millisecond))
	}

	nc.Restart(t, old)
	time.Sleep(time.Second)
	stopOnce()
	var accs [][]client.Accepted
	for _, s := range senders {
		accs = append(accs, s.wait(t))
	}
	want := idsAfter(0, accs...)
	for _, p := range []*timedPeer{alice, bob} {
		p.waitAll(t, chat, slices.Concat(accs...), 15*time.Second)
		p.reconcile(t, chat, 1, want, time.Second)
		st := p.c.Stats()
		t.Logf("%s: live %d, history %d, connects %d", p.name, st.DeliveredLive, st.DeliveredHistory, st.Connects)
	}
	testwait.For(t, 15*time.Second, "the PostgreSQL outbox drains", func() bool { return a.outboxDepth(t) == 0 })
	for _, p := range []*timedPeer{alice, bob} {
		if err := p.stop(t); err != nil {
			t.Errorf("client %s: %v", p.name, err)
		}
	}
	for _, rn := range []*runningNode{a, b} {
		if err := rn.stop(t); err != nil {
			t.Errorf("node %s: %v", rn.NodeID(), err)
		}
	}
}
