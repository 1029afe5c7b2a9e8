package e2e_test

import (
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/reclaim"
)

// exchange has alice and bob send n messages each to one another at once on
// rn, checks that both have all 2n, and waits until the PostgreSQL outbox
// is empty. It returns the messages' ids.
func exchange(t *testing.T, rn *runningNode, n int) []string {
	t.Helper()
	alice := mustPeer(t, rn.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	alice.c.Track(chat)
	bob := mustPeer(t, rn.URL(), "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	bob.waitConnected(t, 1)

	var fromAlice, fromBob []client.Accepted
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); fromAlice = alice.sendN(t, chat, "a", n, 0) }()
	go func() { defer wg.Done(); fromBob = bob.sendN(t, chat, "b", n, 0) }()
	wg.Wait()
	all := idsAfter(0, fromAlice, fromBob)
	alice.reconcile(t, chat, 1, all, 10*time.Second)
	bob.reconcile(t, chat, 1, all, 10*time.Second)
	testwait.For(t, 10*time.Second, "the PostgreSQL outbox empties", func() bool { return rn.outboxDepth(t) == 0 })
	return all
}

// Once the load stops and every recipient acked, both buffers empty: the
// PostgreSQL outbox at once (the relay deletes what it published) and the
// stream within one GC interval (reclaim purges below the Tetris floor,
// which nothing pins any more).
func TestPurgeAfterEveryoneAcked(t *testing.T) {
	const gc = 500 * time.Millisecond
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	// --settle off: every message goes through the stream, whose purge
	// this is about (settled ones never enter it).
	rn := mustRunNode(t, nodeConfig(testpg.NewDatabase(t), ns.ClientURL(), "n1",
		node.Config{Settle: node.SettleOff, Reclaim: reclaim.Config{Interval: gc}}))
	all := exchange(t, rn, 40)
	if _, last := rn.streamState(t); last != uint64(len(all)) {
		t.Fatalf("stream last seq %d, want %d (one stream message per accepted message)", last, len(all))
	}
	waitConsumerDone(t, rn.JetStream(), rn, uint64(len(all)))

	// Everyone acked: the next GC pass must empty the stream. Allow one
	// interval plus the pass itself.
	start := time.Now()
	testwait.For(t, 2*gc+time.Second, "the stream is purged to empty", func() bool {
		msgs, _ := rn.streamState(t)
		return msgs == 0
	})
	t.Logf("stream empty %v after the last ack", time.Since(start).Round(time.Millisecond))
	if got := rn.outboxDepth(t); got != 0 {
		t.Fatalf("outbox depth %d after the purge, want 0", got)
	}
	if got := rn.historyRows(t); got != int64(len(all)) {
		t.Fatalf("history holds %d rows after the purge, want %d: purging the stream must not touch history", got, len(all))
	}
}
