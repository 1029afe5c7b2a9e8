package e2e_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

// A node on the embedded NATS with --nats-listen lets a second node join:
// b connects to a's NATS with a's nkey and shares a's database. Then a is
// not alone, and no message may be kept out of the stream on the word of
// a's own connections: bob on b gets every one of alice's messages from a
// live. The database is either an external one both nodes were given, or
// a's managed one, which b reaches through its socket. In the first case a
// knows at start that nodes can join and settles across them: bob gets
// the messages a shares with b, and a keeps out of the stream only what b
// reported settled. In the second only the node's check of the stream's
// consumers can tell it is no longer alone, and every message goes through
// the stream and b's consumer.
func TestSecondNodeOnTheEmbeddedNATSGetsEveryMessageLive(t *testing.T) {
	tests := []struct {
		name     string
		external bool
	}{
		{"external database", true},
		{"managed database reached through its socket", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfgA := node.Config{
				Listen: "127.0.0.1:0", DataDir: dir, NATSListen: "127.0.0.1:0",
				JWTSecret: testSecret, NodeID: "a", Logger: testLogger().With("node", "a"),
			}
			if tt.external {
				cfgA.DatabaseURL = testpg.NewDatabase(t)
			}
			a := mustRunNode(t, cfgA)
			testwait.For(t, 10*time.Second, "node a takes the relay", func() bool { return a.metric(t, "chatd_relay_active") == 1 })
			dsn := cfgA.DatabaseURL
			if !tt.external {
				dsn = a.Postgres().DSN("chatd")
			}
			b := mustRunNode(t, nodeConfig(dsn, a.NATS().ClientURL(), "b",
				node.Config{NATS: node.NATSOptions{NkeyFile: node.NATSNkeyFile(dir)}}))

			alice := mustPeer(t, a.URL(), "alice", "", nil)
			chat := alice.mustDirect(t, "bob")
			alice.c.Track(chat)
			bob := mustPeer(t, b.URL(), "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
			bob.waitConnected(t, 1)

			const n = 10
			sent := alice.sendN(t, chat, "a", n, 5*time.Millisecond)
			// Bob learns of a message only from a live frame (a frame
			// beyond a gap may be filled from history when the stream
			// reorders, which is fine): with none, he never looks.
			deadline := time.Now().Add(10 * time.Second)
			got := func() int64 { st := bob.c.Stats(); return st.DeliveredLive + st.DeliveredHistory }
			for got() < n && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if st := bob.c.Stats(); got() != n || st.DeliveredLive == 0 {
				t.Fatalf("bob on node b got %d of alice's %d messages live and %d from history (a settled %v, published %v; stats %+v)",
					st.DeliveredLive, n, st.DeliveredHistory, a.metric(t, "chatd_relay_settled_total"), a.metric(t, "chatd_relay_published_total"), st)
			}
			bob.reconcile(t, chat, 1, idsAfter(0, sent), 10*time.Second)
			// The relay counts a row once it is deleted, after the publish
			// that may already have reached bob.
			testwait.For(t, 10*time.Second, "node a's relay to count every row", func() bool {
				return a.metric(t, "chatd_relay_published_total")+a.metric(t, "chatd_relay_settled_total") >= n
			})
			settled, published := a.metric(t, "chatd_relay_settled_total"), a.metric(t, "chatd_relay_published_total")
			if !tt.external && (settled != 0 || published != n) {
				t.Fatalf("node a settled %v and published %v messages with node b joined, want 0 and %d", settled, published, n)
			}
			if reported := b.metric(t, "chatd_push_settle_reports_total"); tt.external && settled > reported {
				t.Fatalf("node a settled %v messages, node b reported %v: a settled some on its own word", settled, reported)
			}
		})
	}
}
