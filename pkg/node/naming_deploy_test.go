package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node/nodetest"
)

// Two deployments on one NATS account, told apart by --stream-name and
// --subject-prefix only (same node id, same user ids, own databases): what
// happens in one (a message, typing, a user coming online) reaches its own
// members and nothing of the other.
func TestTwoDeploymentsShareOneNATS(t *testing.T) {
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	a := nodetest.Run(t, externalConfig(t, ns.ClientURL(), "n1"))
	bcfg := externalConfig(t, ns.ClientURL(), "n1")
	bcfg.Stream.Name, bcfg.SubjectPrefix = "ACME_OUTBOX", "acme.chat"
	b := nodetest.Run(t, bcfg)

	chatA := mustDirect(t, a.URL(), "alice", "bob")
	mustDirect(t, b.URL(), "alice", "bob")
	wsURL := func(n *nodetest.Node) string { return "ws" + strings.TrimPrefix(n.URL(), "http") + "/ws" }
	bobB := mustWS(t, nil, wsURL(b), "bob")
	bobA := mustWS(t, nil, wsURL(a), "bob")
	aliceA := mustWS(t, nil, wsURL(a), "alice")

	// Deployment A works: bob there hears of alice.
	bobA.waitFor(5*time.Second, "alice's presence", func(f map[string]any) bool {
		return f["type"] == "presence" && f["user"] == "alice" && f["online"] == true
	})
	aliceA.send(map[string]any{"type": "send", "chat": chatA, "cid": "c1", "body": "hi"})
	bobA.waitFor(5*time.Second, "alice's message", func(f map[string]any) bool { return f["type"] == "msg" && f["body"] == "hi" })
	aliceA.send(map[string]any{"type": "typing", "chat": chatA})
	bobA.waitFor(5*time.Second, "alice's typing", func(f map[string]any) bool { return f["type"] == "typing" && f["user"] == "alice" })
	deadline := time.Now().Add(5 * time.Second)
	for nodetest.Metric(t, a.Node, "chatd_relay_published_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("deployment A's relay published nothing within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Deployment B's bob, who shares user ids and a chat with alice there,
	// got none of it; B's stream holds nothing.
	if f := bobB.next(1500 * time.Millisecond); f != nil {
		t.Fatalf("bob on deployment B got %v from deployment A, want nothing", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.JetStream().Stream(ctx, "ACME_OUTBOX")
	if err != nil {
		t.Fatalf("deployment B's stream: %v", err)
	}
	if got := s.CachedInfo().State.Msgs; got != 0 {
		t.Errorf("deployment B's stream holds %d messages, want 0", got)
	}
}
