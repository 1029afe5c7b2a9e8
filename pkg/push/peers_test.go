package push_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/nats-io/nats.go"
)

// A committed batch too large for one NATS message (a large room's
// messages, each naming every member, with long bodies) is shared in as
// many as it needs: each reaches the other node, whose connection gets
// every message.
func TestLargeBatchSharedInPieces(t *testing.T) {
	e := mustEnv(t)
	nc := e.js.Conn()
	peers := func(c *push.Config) {
		c.Settle, c.Peers, c.Conn, c.MaxPending = true, true, nc, 100
		c.FastSubject, c.SettledPrefix, c.SkippedSubject = "t.settle.shared", "t.settle.done.", "t.settle.skipped"
	}
	a := mustRegistry(t, e, "a", peers)
	b := mustRegistry(t, e, "b", peers)
	bob := &recConn{user: "bob", device: "phone"}
	if err := b.Attach(bob); err != nil {
		t.Fatal(err)
	}
	var pieces atomic.Int64
	sub, err := nc.Subscribe("t.settle.shared", func(*nats.Msg) { pieces.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	members := []string{"bob"}
	for i := range 500 {
		members = append(members, "member-"+strings.Repeat("x", 20)+string(rune('a'+i%26))+time.Now().Format("150405.000000000"))
	}
	body := strings.Repeat("b", 60<<10)
	var envs []chatd.Envelope
	for range 40 {
		m := e.newMsg("alice")
		m.Body = body
		envs = append(envs, chatd.Envelope{OutboxID: e.nextID, Message: m, Device: "web", Recipients: members})
	}
	a.Share(envs)
	testwait.For(t, 10*time.Second, "bob on b gets all 40 shared messages", func() bool { return len(bob.received()) == 40 })
	limit := nc.MaxPayload()
	if n := pieces.Load(); n < 3 {
		t.Fatalf("40 messages of %d KiB shared in %d NATS messages (max payload %d KiB), want at least 3", len(body)>>10, n, limit>>10)
	}
}
