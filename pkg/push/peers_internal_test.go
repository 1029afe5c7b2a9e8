package push

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Settling across nodes on the committing node: settled here and proved
// by a listing is not enough while a peer that listing found has not
// reported the message; a report from a node outside the listing counts for
// nothing; a peer that appears in a later listing must report too.
func TestSettlingWaitsForEveryPeer(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a := &session{fast: map[string]fastEntry{}}

	st := newSettling(true)
	st.handled("m", []*session{a}, false, false, at(0))
	st.done("m")
	st.listed(at(1), false, []string{"n2", "n3"})
	if st.settled("m") {
		t.Fatal("m settled before either peer reported it")
	}
	st.reported("n2", []string{"m"})
	st.reported("n4", []string{"m"}) // not a peer: no consumer in the listing
	if st.settled("m") {
		t.Fatal("m settled with peer n3 yet to report it")
	}
	st.reported("n3", []string{"m", "unknown"})
	if !st.settled("m") {
		t.Fatal("m not settled after both peers reported it")
	}
	st.listed(at(2), false, []string{"n2", "n3", "n5"})
	if st.settled("m") {
		t.Fatal("m settled with a new peer n5 (its consumer in a later listing) yet to report it")
	}
}

// Settling across nodes on a node given a shared message: it is reported
// to the committing node once every connection handed the frame acked it,
// at once when no local connection got one, never while a registered
// recipient's connection missed the frame. A shared message never reads
// settled here (only its committing node's relay asks). A reported one
// keeps its sessions' fast entries until its origin says it kept it out of
// the stream (a stream delivery after all must find them and send no frame
// twice), or until that delivery comes.
func TestSharedMessagesReportedOnceSettledHere(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	a := &session{fast: map[string]fastEntry{}}
	st := newSettling(true)

	a.fast["s1"] = fastEntry{at: now, counted: true}
	a.fast["s2"] = fastEntry{at: now, counted: true}
	st.handledFor("n1", "s1", []*session{a}, false, now)
	st.handledFor("n1", "s2", []*session{a}, false, now)
	st.handledFor("n1", "nobody", nil, false, now)
	st.handledFor("n2", "missed", nil, true, now)
	st.listed(now.Add(time.Second), false, nil)
	if st.settled("s1") {
		t.Fatal("a shared message reads settled on the node it was shared with")
	}
	if got := st.reports["n1"]; !slices.Equal(got, []string{"nobody"}) {
		t.Fatalf("reports before the acks: %v, want only the message no connection here got", got)
	}
	select {
	case <-st.kick:
	default:
		t.Fatal("the first report queued did not wake the reporter")
	}
	for _, id := range []string{"s1", "s2"} {
		a.fast[id] = fastEntry{at: now, counted: true, acked: true}
		st.done(id)
	}
	st.done("s1") // a second count-down reports nothing twice
	if got := st.reports["n1"]; !slices.Equal(got, []string{"nobody", "s1", "s2"}) {
		t.Fatalf("reports after the acks: %v, want nobody, s1 and s2 once each", got)
	}
	if len(a.fast) != 2 || st.local["s1"] == nil {
		t.Fatal("a reported message's account or fast entry went before its origin said what became of it")
	}
	st.skippedBy("n2", []string{"s1"}) // not its origin
	st.skippedBy("n1", []string{"s1"})
	st.deliveredShared("s2")
	if _, ok := a.fast["s1"]; ok || st.local["s1"] != nil || st.local["s2"] != nil {
		t.Fatalf("after s1 was kept out of the stream and s2 delivered by it: fast entries %v, accounts %v; want s1's gone, s2's account gone", a.fast, st.local)
	}
	if _, ok := a.fast["s2"]; !ok {
		t.Fatal("s2's fast entry went with its account: its stream delivery needs it")
	}
	if st.local["missed"] == nil || len(st.reports["n2"]) != 0 {
		t.Fatalf("missed: account %v, reports to n2 %v; want it kept and unreported", st.local["missed"], st.reports["n2"])
	}
}

func TestSplitPeers(t *testing.T) {
	peers, others := splitPeers([]string{"push-n2", "hook-a", "push-n3", "debug"})
	if !slices.Equal(peers, []string{"n2", "n3"}) || !slices.Equal(others, []string{"hook-a", "debug"}) {
		t.Fatalf("peers %v others %v", peers, others)
	}
}

// Across nodes, only the node whose relay leads lists the stream's
// consumers, and one that stops leading forgets what its listings proved:
// a message it had read settled is not settled until it leads and lists
// again.
func TestOnlyTheLeadingNodeLists(t *testing.T) {
	r, err := New(Config{NodeID: "a", Settle: true, Peers: true, Conn: &nats.Conn{}, FastSubject: "s", SettledPrefix: "d.", SkippedSubject: "k"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.mu.Lock()
	r.settle.handled("m", nil, false, false, now)
	r.mu.Unlock()
	if r.lists() {
		t.Fatal("a node whose relay does not lead lists the consumers")
	}
	r.Lead(true)
	if !r.lists() {
		t.Fatal("the leading node does not list the consumers")
	}
	r.mu.Lock()
	r.settle.listed(now.Add(time.Millisecond), false, nil)
	r.mu.Unlock()
	if settled, _ := r.Settled("m"); !settled {
		t.Fatal("m not settled after a listing on the leading node")
	}
	r.Lead(false)
	if settled, _ := r.Settled("m"); settled || r.lists() {
		t.Fatalf("after the lead was lost: m settled %v, lists %v; want neither", settled, r.lists())
	}
	alone, err := New(Config{NodeID: "b", Settle: true})
	if err != nil {
		t.Fatal(err)
	}
	if !alone.lists() {
		t.Fatal("a node settling alone does not list the consumers")
	}
}

// A node's reports reach the committing node well within its relay's
// settle wait: the gathering is a tenth of the wait, at most
// DefaultReportGather, at least a millisecond.
func TestReportGatherFitsTheSettleWait(t *testing.T) {
	for _, c := range []struct{ wait, want time.Duration }{
		{250 * time.Millisecond, DefaultReportGather},
		{time.Second, DefaultReportGather},
		{50 * time.Millisecond, 5 * time.Millisecond},
		{5 * time.Millisecond, time.Millisecond},
		{0, time.Millisecond},
	} {
		if got := ReportGatherFor(c.wait); got != c.want {
			t.Errorf("ReportGatherFor(%v) = %v, want %v", c.wait, got, c.want)
		}
	}
}

// The skipped ids queued for the reporter are bounded: a node whose
// reporter does not run (closing, or its subscriptions refused) keeps at
// most maxSkippedQueued of them, and goes on forgetting the messages.
func TestSkippedQueueBounded(t *testing.T) {
	r, err := New(Config{NodeID: "a", Settle: true, Peers: true, Conn: &nats.Conn{}, FastSubject: "s", SettledPrefix: "d.", SkippedSubject: "k"})
	if err != nil {
		t.Fatal(err)
	}
	round := make([]string, 1000)
	for i := range round {
		round[i] = "m"
	}
	for range 2 * maxSkippedQueued / len(round) {
		r.Forget(round, nil)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.settle.skipped); n == 0 || n > maxSkippedQueued {
		t.Fatalf("%d skipped ids queued after %d relay rounds of %d with no reporter, want some and at most %d", n, 2*maxSkippedQueued/len(round), len(round), maxSkippedQueued)
	}
}

// A node whose relay stops leading forgets what its listings saw of the
// peers' heartbeats: leading again, it times a peer's lapse anew, so a
// lapse it saw before is not taken for one that lasted since.
func TestLeadLostForgetsPeersSeen(t *testing.T) {
	r, err := New(Config{NodeID: "a", Settle: true, Peers: true, Conn: &nats.Conn{}, FastSubject: "s", SettledPrefix: "d.", SkippedSubject: "k"})
	if err != nil {
		t.Fatal(err)
	}
	r.Lead(true)
	r.mu.Lock()
	r.settle.seen["b"] = time.Now().Add(-time.Hour)
	r.mu.Unlock()
	r.Lead(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.settle.seen) != 0 {
		t.Fatalf("peers seen after the lead was lost: %v, want none", r.settle.seen)
	}
}
