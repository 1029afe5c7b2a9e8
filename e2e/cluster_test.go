package e2e_test

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// commitNotes counts the commit announcements to the leading relay (on
// the default prefix's chat.relay.wake) by the node that sent them, from a
// NATS connection of its own, until the test ends.
type commitNotes struct {
	mu     sync.Mutex
	byNode map[string]int
}

func listenCommits(t *testing.T, natsURL string) *commitNotes {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatalf("connect to NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	n := &commitNotes{byNode: make(map[string]int)}
	if _, err := nc.Subscribe("chat.relay.wake", func(m *nats.Msg) {
		n.mu.Lock()
		n.byNode[string(m.Data)]++
		n.mu.Unlock()
	}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush the subscription: %v", err)
	}
	return n
}

func (n *commitNotes) from(node string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byNode[node]
}

// relayActive reports the chatd_relay_active gauge of each node.
func relayActive(t *testing.T, nodes ...*runningNode) []float64 {
	t.Helper()
	out := make([]float64, len(nodes))
	for i, rn := range nodes {
		out[i] = rn.metric(t, "chatd_relay_active")
	}
	return out
}

// forwardBatches is a node's chatd_forward_batches_total{path}.
func forwardBatches(t *testing.T, rn *runningNode, path string) float64 {
	t.Helper()
	return testmetric.Sum(t, rn.Registry(), "chatd_forward_batches_total", "path", path)
}

// Two nodes on one PostgreSQL and one NATS elect one relay; recipients on
// either node receive what is sent on the other; cancelling the relay's
// node hands the relay over and delivery goes on through it. Each node
// commits its own sends (--forward-commits off), so the standing-by node
// announces its commits to the relay.
func TestTwoNodesOneRelayHandsOver(t *testing.T) {
	twoNodesOneRelay(t, node.ForwardOff)
}

// The same with the sends of the node whose relay stands by committed by
// the node whose relay leads (--forward-commits on, the default): nothing
// needs announcing, and after the hand-over the new leading node commits
// what the next one forwards.
func TestTwoNodesCommitOnTheRelaysNode(t *testing.T) {
	twoNodesOneRelay(t, node.ForwardOn)
}

func twoNodesOneRelay(t *testing.T, forward string) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{Forward: forward}))
	testwait.For(t, 10*time.Second, "node a takes the relay", func() bool { return a.metric(t, "chatd_relay_active") == 1 })
	b := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "b", node.Config{Forward: forward}))

	alice := mustPeer(t, a.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	alice.c.Track(chat)
	bob := mustPeer(t, b.URL(), "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	bob.waitConnected(t, 1)
	notes := listenCommits(t, ns.ClientURL())

	var fromAlice, fromBob []client.Accepted
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); fromAlice = alice.sendN(t, chat, "a", 15, 5*time.Millisecond) }()
	go func() { defer wg.Done(); fromBob = bob.sendN(t, chat, "b", 15, 5*time.Millisecond) }()
	wg.Wait()
	all := idsAfter(0, fromAlice, fromBob)
	alice.reconcile(t, chat, 1, all, 10*time.Second)
	bob.reconcile(t, chat, 1, all, 10*time.Second)
	if got := relayActive(t, a, b); got[0] != 1 || got[1] != 0 {
		t.Fatalf("relay active on a, b = %v, want exactly one (a)", got)
	}
	// a's relay is handed a's commits and woken for them directly; b
	// announces its own commits, or forwards them to a.
	switch na, nb := notes.from("a"), notes.from("b"); {
	case forward == node.ForwardOff && (na != 0 || nb == 0):
		t.Errorf("commit announcements from a, b = %d, %d; want none from the leading node a and some from b", na, nb)
	case forward == node.ForwardOn && (na != 0 || nb != 0):
		t.Errorf("commit announcements from a, b = %d, %d; want none: a's relay is handed every commit", na, nb)
	}
	if forward == node.ForwardOn {
		if fb, ta := forwardBatches(t, b, "forwarded"), forwardBatches(t, a, "taken"); fb == 0 || fb != ta ||
			forwardBatches(t, b, "fallback") != 0 {
			t.Errorf("b forwarded %v batches (%v fell back), a took %v; want all of b's taken by a", fb, forwardBatches(t, b, "fallback"), ta)
		}
	}
	// Each of the other node's messages came as a msg frame through the
	// stream (a slow one may have been fetched from history first, when the
	// client's gap wait ran out, and then arrived as a duplicate frame).
	for name, p := range map[string]*peer{"alice": alice, "bob": bob} {
		if st := p.c.Stats(); st.MsgFrames < 15 {
			t.Errorf("%s got %d msg frames for the other node's 15 messages, want at least 15 (stats %+v)", name, st.MsgFrames, st)
		}
	}

	// Cancel the relay's node; b takes over within its standby period.
	alice.stop(t)
	if err := a.stop(t); err != nil {
		t.Fatalf("node a: %v", err)
	}
	start := time.Now()
	testwait.For(t, 6*time.Second, "node b takes over the relay", func() bool { return b.metric(t, "chatd_relay_active") == 1 })
	t.Logf("relay handed over in %v", time.Since(start).Round(time.Millisecond))

	// A new node c stands by; what is sent on c reaches bob on b only
	// through b's relay, the stream and b's consumer.
	c := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "c", node.Config{Forward: forward}))
	alice2 := mustPeer(t, c.URL(), "alice", "", nil)
	later := alice2.sendN(t, chat, "c", 10, 5*time.Millisecond)
	bob.reconcile(t, chat, 1, idsAfter(0, fromAlice, fromBob, later), 10*time.Second)
	if forward == node.ForwardOn && (forwardBatches(t, c, "forwarded") == 0 || forwardBatches(t, b, "taken") == 0) {
		t.Errorf("c forwarded %v batches and b took %v after the hand-over; want b to commit c's sends",
			forwardBatches(t, c, "forwarded"), forwardBatches(t, b, "taken"))
	}
	testwait.For(t, 10*time.Second, "the outbox drains", func() bool { return b.outboxDepth(t) == 0 })
	// With the commits on one node the nodes settle across each other, and
	// the node that took the relay over does too: node a deleted its
	// consumer as it stopped, so nobody waits for its reports.
	if forward == node.ForwardOn {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := b.JetStream().Consumer(ctx, stream.DefaultName, push.ConsumerName("a")); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Errorf("node a's consumer after a stopped: %v, want it deleted", err)
		}
		if settled := b.metric(t, "chatd_relay_settled_total"); settled == 0 {
			t.Errorf("b settled none of c's 10 messages to bob on b after the hand-over (published %v)", b.metric(t, "chatd_relay_published_total"))
		}
	}
	if got := relayActive(t, b, c); got[0] != 1 || got[1] != 0 {
		t.Fatalf("relay active on b, c = %v, want exactly one (b)", got)
	}
}

// NATS restarted mid-flow (same port, same store): sends keep being
// accepted into PostgreSQL, the outbox absorbs the outage and drains when
// NATS is back, and the recipient on the other node has every accepted
// message, live or from history.
func TestNATSRestartMidFlow(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	dir := t.TempDir()
	ns := mustNATS(t, dir, "127.0.0.1:0")
	natsURL := ns.ClientURL()
	u, err := url.Parse(natsURL)
	if err != nil {
		t.Fatalf("nats url %q: %v", natsURL, err)
	}
	a := mustRunNode(t, nodeConfig(dsn, natsURL, "a", node.Config{}))
	b := mustRunNode(t, nodeConfig(dsn, natsURL, "b", node.Config{}))
	alice := mustPeer(t, a.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	bob := mustPeer(t, b.URL(), "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	bob.waitConnected(t, 1)

	const total = 60
	var sent []client.Accepted
	done := make(chan struct{})
	go func() { defer close(done); sent = alice.sendN(t, chat, "m", total, 20*time.Millisecond) }()

	testwait.For(t, 10*time.Second, "the first sends are accepted", func() bool { return alice.c.Stats().Accepted >= 15 })
	ns.Shutdown()
	testwait.For(t, 10*time.Second, "sends are accepted while NATS is down", func() bool { return alice.c.Stats().Accepted >= 30 })
	if got := a.outboxDepth(t); got == 0 {
		t.Fatal("the PostgreSQL outbox is empty while NATS is down: the relay cannot have published")
	}
	mustNATS(t, dir, u.Host)
	<-done
	if len(sent) != total {
		t.Fatalf("%d of %d sends accepted", len(sent), total)
	}
	bob.reconcile(t, chat, 1, idsAfter(0, sent), 15*time.Second)
	testwait.For(t, 15*time.Second, "the PostgreSQL outbox drains after NATS returns", func() bool { return a.outboxDepth(t) == 0 })
	st := bob.c.Stats()
	t.Logf("recipient: %d live, %d from history, %d reconnects", st.DeliveredLive, st.DeliveredHistory, st.Connects-1)
}
