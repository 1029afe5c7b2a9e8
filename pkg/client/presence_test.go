package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node"
)

// Presence returns the server's snapshot: a connected contact online, a
// user the server never saw offline with no last_seen. (Only users who
// share a chat with the caller are shown online at all.)
func TestIntegrationPresenceSnapshot(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "phone", nil)
	run(t, alice, false)
	waitConnected(t, alice)
	bob := mustClient(t, n, "bob", "phone", nil)
	mustDirect(t, bob, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := bob.Presence(ctx, "alice", "nobody")
		if err != nil {
			t.Fatalf("presence: %v", err)
		}
		if st["alice"].Online {
			if no, ok := st["nobody"]; !ok || no.Online || !no.LastSeen.IsZero() {
				t.Fatalf("never-seen user: %+v (present %v), want offline without last_seen", no, ok)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice not online within 10s: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
