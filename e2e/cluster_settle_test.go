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
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
)

// Three nodes settle across each other (docs/architecture.md, "Settled
// across nodes"): the leading node shares what it commits, the others run
// their fast paths and report what their connections acked, and a message
// every node reported stays out of the stream. Everyone still gets every
// message. A consumer other than the nodes' (an integration's, one made
// with the nats CLI) needs the stream: while it exists every message goes
// there. So does one of a node that does not report (--settle off, as a node
// of an older build), and its user still gets every message live.
func TestNodesSettleAcrossEachOther(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{}))
	testwait.For(t, 10*time.Second, "node a takes the relay", func() bool { return a.metric(t, "chatd_relay_active") == 1 })
	b := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "b", node.Config{}))
	c := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "c", node.Config{}))

	alice := mustPeer(t, b.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	alice.c.Track(chat)
	bob := mustPeer(t, c.URL(), "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	bob.waitConnected(t, 1)

	exchange := func(prefix string, n int) []client.Accepted {
		var fromAlice, fromBob []client.Accepted
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); fromAlice = alice.sendN(t, chat, prefix+"a", n, 5*time.Millisecond) }()
		go func() { defer wg.Done(); fromBob = bob.sendN(t, chat, prefix+"b", n, 5*time.Millisecond) }()
		wg.Wait()
		return append(fromAlice, fromBob...)
	}
	relayed := func() (settled, published float64) {
		return a.metric(t, "chatd_relay_settled_total"), a.metric(t, "chatd_relay_published_total")
	}

	sent := exchange("x", 20)
	alice.reconcile(t, chat, 1, idsAfter(0, sent), 10*time.Second)
	bob.reconcile(t, chat, 1, idsAfter(0, sent), 10*time.Second)
	testwait.For(t, 10*time.Second, "the outbox drains", func() bool { return a.outboxDepth(t) == 0 })
	settled, published := relayed()
	msgs, _ := a.streamState(t)
	t.Logf("settled %v, published %v, in the stream %d; b reported %v, c %v",
		settled, published, msgs, b.metric(t, "chatd_push_settle_reports_total"), c.metric(t, "chatd_push_settle_reports_total"))
	// Each message is acked within milliseconds, well inside the relay's
	// wait; a slow moment on a busy machine may publish a few.
	if settled < 30 || settled+published != 40 || uint64(published) != msgs {
		t.Fatalf("relayed 40 messages between nodes b and c: settled %v, published %v, %d in the stream; want at least 30 settled and the rest in the stream",
			settled, published, msgs)
	}
	if b.metric(t, "chatd_push_shared_total") < 40 || c.metric(t, "chatd_push_settle_reports_total") < 30 {
		t.Fatalf("b was shared %v messages, c reported %v settled; want all 40 shared and most reported",
			b.metric(t, "chatd_push_shared_total"), c.metric(t, "chatd_push_settle_reports_total"))
	}
	// What the nodes kept for settling goes once the relay is done: the
	// committing node's accounts with its rows, the others' with its word
	// that it kept the messages out of the stream.
	for name, n := range map[string]*runningNode{"a": a, "b": b, "c": c} {
		testwait.For(t, 10*time.Second, "node "+name+"'s settle accounts drain", func() bool {
			return n.metric(t, "chatd_push_settle_accounts") == 0
		})
	}

	// A consumer of the stream other than the nodes': nothing settles.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	foreign, err := a.JetStream().CreateConsumer(ctx, stream.DefaultName, jetstream.ConsumerConfig{Durable: "someone-else", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("create a foreign consumer: %v", err)
	}
	testwait.For(t, 10*time.Second, "node a sees the foreign consumer", func() bool { return a.metric(t, "chatd_push_settle_alone") == 0 })
	settled0, published0 := relayed()
	more := exchange("y", 5)
	all := idsAfter(0, sent, more)
	alice.reconcile(t, chat, 1, all, 10*time.Second)
	bob.reconcile(t, chat, 1, all, 10*time.Second)
	testwait.For(t, 10*time.Second, "the outbox drains", func() bool { return a.outboxDepth(t) == 0 })
	if settled, published := relayed(); settled != settled0 || published-published0 != 10 {
		t.Fatalf("with a foreign consumer: settled %v more, published %v more; want none settled, all 10 published",
			settled-settled0, published-published0)
	}
	if err := a.JetStream().DeleteConsumer(ctx, stream.DefaultName, foreign.CachedInfo().Name); err != nil {
		t.Fatalf("delete the foreign consumer: %v", err)
	}
	testwait.For(t, 10*time.Second, "node a settles again", func() bool { return a.metric(t, "chatd_push_settle_alone") == 1 })

	// A node that does not report, with a connection of bob's: every
	// message goes to the stream, and reaches it live. Bob's first device
	// on c had each one from the share and reported it: its stream
	// delivery finds c's fast entry and sends no second frame.
	d := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "d", node.Config{Settle: node.SettleOff}))
	bob2 := mustPeer(t, d.URL(), "bob", "second", func(c *client.Config) { c.Chats = []string{chat} })
	bob2.waitConnected(t, 1)
	settled0, published0 = relayed()
	dup0 := bob.c.Stats().DuplicateFrames
	last := alice.sendN(t, chat, "z", 10, 5*time.Millisecond)
	all = idsAfter(0, sent, more, last)
	bob.reconcile(t, chat, 1, all, 10*time.Second)
	testwait.For(t, 10*time.Second, "the outbox drains", func() bool { return a.outboxDepth(t) == 0 })
	if settled, published := relayed(); settled != settled0 || published-published0 != 10 {
		t.Fatalf("with node d not reporting: settled %v more, published %v more; want none settled, all 10 published",
			settled-settled0, published-published0)
	}
	testwait.For(t, 10*time.Second, "bob's second device gets alice's last 10 live", func() bool {
		return bob2.c.Stats().MsgFrames >= 10
	})
	if dup := bob.c.Stats().DuplicateFrames - dup0; dup != 0 {
		t.Fatalf("bob on c got %d duplicate frames of the 10 messages published after c reported them", dup)
	}
}
