package push_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
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

// A node gathers what it sends its peers: the ids it reports settled to the
// committing node, and the ids the committing node kept out of the stream,
// go in one NATS message per gathering rather than one per acked message
// or per relay round (each NATS message costs both nodes far more than an
// id in it).
func TestReportsAndSkippedIDsGathered(t *testing.T) {
	e := mustEnv(t)
	nc := e.js.Conn()
	peers := func(c *push.Config) {
		c.Settle, c.Peers, c.Conn = true, true, nc
		c.FastSubject, c.SettledPrefix, c.SkippedSubject = "g.settle.shared", "g.settle.done.", "g.settle.skipped"
		c.ReportGather = time.Second
	}
	a := mustRegistry(t, e, "a", peers)
	mustRegistry(t, e, "b", peers)
	reports := idsOn(t, nc, "g.settle.done.a")
	skipped := idsOn(t, nc, "g.settle.skipped")
	share := func() {
		m := e.newMsg("alice")
		a.Share([]chatd.Envelope{{OutboxID: e.nextID, Message: m, Device: "web", Recipients: []string{"carol"}}})
	}

	share() // carol has no connection on b: settled there at once
	testwait.For(t, 10*time.Second, "b reports the first shared message", func() bool { return reports.ids() == 1 })
	for range 3 {
		time.Sleep(10 * time.Millisecond)
		share()
	}
	testwait.For(t, 10*time.Second, "b reports all four shared messages", func() bool { return reports.ids() == 4 })
	if n := reports.msgs(); n != 2 {
		t.Fatalf("b reported 4 messages in %d NATS messages, want 2: the first, then the next three, shared 10 ms apart, gathered", n)
	}

	a.Forget([]string{"x1"}, nil)
	a.Forget([]string{"x2", "x3"}, nil)
	testwait.For(t, 10*time.Second, "a announces the three ids it kept out of the stream", func() bool { return skipped.ids() == 3 })
	if n := skipped.msgs(); n != 1 {
		t.Fatalf("a announced 3 ids kept out of the stream, from two relay rounds, in %d NATS messages, want 1", n)
	}
}

// idCounter counts the NATS messages on a subject and the ids, one per
// line, in them.
type idCounter struct{ nmsgs, nids atomic.Int64 }

func (c *idCounter) msgs() int64 { return c.nmsgs.Load() }
func (c *idCounter) ids() int64  { return c.nids.Load() }

func idsOn(t *testing.T, nc *nats.Conn, subject string) *idCounter {
	t.Helper()
	c := &idCounter{}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		c.nmsgs.Add(1)
		c.nids.Add(int64(len(strings.Split(string(m.Data), "\n"))))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

// Only the leading node shares, so it takes no shares: core NATS would
// echo each of its own back to it, to be read and thrown away. A node that
// stops leading takes the shares of the node that leads next.
func TestLeadingNodeTakesNoShares(t *testing.T) {
	srv := testnats.Start(t)
	ncA, ncB := testnats.Connect(t, srv), testnats.Connect(t, srv)
	e := &env{js: testnats.JetStreamOf(t, ncA)}
	if _, err := stream.Ensure(context.Background(), e.js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	peersOn := func(nc *nats.Conn) func(*push.Config) {
		return func(c *push.Config) {
			c.Settle, c.Peers, c.Conn, c.JS = true, true, nc, testnats.JetStreamOf(t, nc)
			c.FastSubject, c.SettledPrefix, c.SkippedSubject = "l.settle.shared", "l.settle.done.", "l.settle.skipped"
		}
	}
	a := mustRegistry(t, e, "a", peersOn(ncA))
	b := mustRegistry(t, e, "b", peersOn(ncB))
	bobOnA := &recConn{user: "bob", device: "phone"}
	if err := a.Attach(bobOnA); err != nil {
		t.Fatal(err)
	}
	bobOnB := &recConn{user: "bob", device: "laptop"}
	if err := b.Attach(bobOnB); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("b", 50<<10)
	shareFrom := func(r *push.Registry) {
		for range 10 {
			m := e.newMsg("alice")
			m.Body = body
			r.Share([]chatd.Envelope{{OutboxID: e.nextID, Message: m, Device: "web", Recipients: []string{"bob"}}})
		}
	}
	// inBytes is what conn has read once the server has sent it everything
	// published before: a flush's PONG comes after.
	inBytes := func(nc *nats.Conn) uint64 {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return nc.Stats().InBytes
	}
	const shared = 10 * 50 << 10

	b.Lead(true)
	before := inBytes(ncB)
	shareFrom(b)
	testwait.For(t, 10*time.Second, "bob's phone on a gets the 10 messages b shared", func() bool { return len(bobOnA.received()) == 10 })
	if got := inBytes(ncB) - before; got >= shared {
		t.Fatalf("the leading node read %d KiB while it shared %d KiB: its own shares came back to it", got>>10, shared>>10)
	}

	b.Lead(false)
	a.Lead(true)
	before = inBytes(ncA)
	shareFrom(a)
	testwait.For(t, 10*time.Second, "bob's laptop on b, which leads no more, gets the 10 messages a shared", func() bool { return len(bobOnB.received()) == 10 })
	if got := inBytes(ncA) - before; got >= shared {
		t.Fatalf("the node leading next read %d KiB while it shared %d KiB: its own shares came back to it", got>>10, shared>>10)
	}
}
