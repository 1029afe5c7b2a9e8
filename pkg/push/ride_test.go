package push_test

import (
	"slices"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/nats-io/nats.go"
)

// A report rides the next batch its node forwards to the committing node,
// and a skipped announcement the next share: each settles what it carries
// there as its own message would, and the reporter sends nothing for what
// rode. What nothing took within the gathering still goes on its own.
func TestReportsAndSkippedIDsRide(t *testing.T) {
	e := mustEnv(t)
	nc := e.js.Conn()
	const gather = 500 * time.Millisecond // far longer than the test takes between queueing an id and its ride
	peers := func(c *push.Config) {
		c.Lease = 10 * time.Second
		c.Settle, c.Peers, c.Conn = true, true, nc
		c.FastSubject, c.SettledPrefix, c.SkippedSubject = "r.settle.shared", "r.settle.done.", "r.settle.skipped"
		c.ReportGather = gather
		push.ListByHand(c)
	}
	a := mustRegistry(t, e, "a", peers)
	b := mustRegistry(t, e, "b", peers)
	a.Lead(true)
	reports := idsOn(t, nc, "r.settle.done.a")
	skipped := idsOn(t, nc, "r.settle.skipped")
	bob := &recConn{user: "bob", device: "phone"}
	attachAll(t, b, bob)
	commit := func(to string) chatd.Message {
		m := e.newMsg("alice")
		a.FastPath(&m, []string{"alice", to}) // as the committing node's onCommit does before it shares
		a.Share([]chatd.Envelope{{OutboxID: e.nextID, Message: m, Device: "web", Recipients: []string{"alice", to}}})
		return m
	}

	m := commit("bob")
	testwait.For(t, 10*time.Second, "bob on b gets the shared message", func() bool { return len(bob.received()) == 1 })
	b.Ack(bob, []string{m.ID})
	h := nats.Header{}
	b.AttachReports(h, push.RiderRoom)
	if got, want := h.Values("Chatd-Reports"), []string{"a " + m.ID}; !slices.Equal(got, want) {
		t.Fatalf("b's forwarded batch carries reports %q, want %q", got, want)
	}
	if settled(t, a, m.ID) {
		t.Fatal("settled on a before b's report reached it")
	}
	a.TakeReports("b", h)
	if !settled(t, a, m.ID) {
		t.Fatal("not settled on a after b's report rode a forwarded batch")
	}
	if local, fast := b.Tracked(); local != 1 || fast != 1 {
		t.Fatalf("b keeps %d accounts and %d fast entries after reporting, want 1 and 1 until a says it skipped the message", local, fast)
	}

	a.Forget([]string{m.ID}, nil) // the relay kept it out of the stream: to announce
	commit("carol")               // nobody on b: b reports it at once, on its own
	testwait.For(t, 10*time.Second, "b drops its entries for the message a skipped, told by the next share", func() bool {
		local, fast := b.Tracked()
		return local == 0 && fast == 0
	})
	testwait.For(t, 10*time.Second, "b reports the second message, which no batch took, on its own", func() bool { return reports.ids() == 1 })
	time.Sleep(2 * gather) // time for a message the riders should have made needless
	if n := reports.msgs(); n != 1 {
		t.Fatalf("b sent %d reports on their own, want 1: the first rode a forwarded batch", n)
	}
	if n := skipped.msgs(); n != 0 {
		t.Fatalf("a sent %d skipped announcements on their own, want none: the ids rode the next share", n)
	}

	a.Forget([]string{"x1", "x2"}, nil)
	testwait.For(t, 10*time.Second, "a announces ids no share took, on their own", func() bool { return skipped.ids() == 2 })
}

// Once a rider took everything queued, the reporter gathers afresh from the
// next id: a report queued after the take waits its whole gathering for
// the next batch to ride, rather than going on its own when the gathering
// of the ids that rode ends.
func TestGatheringRestartsAfterARide(t *testing.T) {
	e := mustEnv(t)
	nc := e.js.Conn()
	const gather = 2 * time.Second
	peers := func(c *push.Config) {
		c.Settle, c.Peers, c.Conn = true, true, nc
		c.FastSubject, c.SettledPrefix, c.SkippedSubject = "g2.settle.shared", "g2.settle.done.", "g2.settle.skipped"
		c.ReportGather = gather
	}
	a := mustRegistry(t, e, "a", peers)
	b := mustRegistry(t, e, "b", peers)
	a.Lead(true)
	reports := idsOn(t, nc, "g2.settle.done.a")
	share := func() {
		m := e.newMsg("alice")
		a.Share([]chatd.Envelope{{OutboxID: e.nextID, Message: m, Device: "web", Recipients: []string{"carol"}}})
	}

	start := time.Now()
	share() // carol has no connection on b: reported at once, the gathering begins
	testwait.For(t, 10*time.Second, "b queues the first report", func() bool {
		h := nats.Header{}
		b.AttachReports(h, push.RiderRoom)
		return len(h.Values("Chatd-Reports")) == 1
	})
	time.Sleep(gather / 3)
	share() // queued after the ride: its gathering begins now
	time.Sleep(time.Until(start.Add(gather * 7 / 6)))
	if n := reports.msgs(); n != 0 {
		t.Fatalf("b sent %d reports on their own when the first gathering ended, want none: the second report's gathering began after the ride", n)
	}
	testwait.For(t, 10*time.Second, "b reports the second message on its own once its own gathering ends", func() bool { return reports.ids() == 1 })
}
