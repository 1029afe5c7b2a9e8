package push

import (
	"testing"
	"time"
)

// The settle state machine as docs/architecture.md draws it: a message
// reads settled only once every connection handed it acked or left, no
// registered recipient connection missed it, and a listing begun after its
// fast path found the node alone; another consumer turns settling off until
// a later listing finds none again; a failed listing (no call to listed)
// changes nothing.
func TestSettlingStateMachine(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a, b := &session{fast: map[string]fastEntry{}}, &session{fast: map[string]fastEntry{}}

	st := newSettling(true)
	st.handled("m1", []*session{a, b}, false, false, at(0))
	st.handled("missed", []*session{a}, true, false, at(0))
	st.handled("away", []*session{a}, false, true, at(0)) // a recipient had no connection
	st.done("away")
	st.done("m1")
	st.done("missed")
	if st.settled("m1") {
		t.Fatal("m1 settled with one of two connections still waiting")
	}
	st.done("m1")
	if st.settled("m1") {
		t.Fatal("m1 settled before any listing proved the node alone")
	}
	if changed := st.listed(at(-1), false, nil); changed || st.settled("m1") {
		t.Fatalf("a listing begun before m1's fast path: changed %v, settled %v; want neither", changed, st.settled("m1"))
	}
	st.listed(at(1), false, nil)
	if !st.settled("m1") || st.settled("missed") || st.settled("unknown") {
		t.Fatalf("after a listing begun later: m1 %v, missed %v, unknown %v; want only m1 settled",
			st.settled("m1"), st.settled("missed"), st.settled("unknown"))
	}
	// Settled as well, but not taken by everyone: one recipient was away.
	if !st.settled("away") || !st.taken("m1") || st.taken("away") {
		t.Fatalf("away settled %v, m1 taken %v, away taken %v; want away settled, only m1 taken",
			st.settled("away"), st.taken("m1"), st.taken("away"))
	}
	if changed := st.listed(at(2), true, nil); !changed || st.settled("m1") {
		t.Fatalf("another consumer: changed %v, m1 settled %v; want changed and m1 not settled", changed, st.settled("m1"))
	}
	if changed := st.listed(at(3), false, nil); !changed || !st.settled("m1") {
		t.Fatalf("alone again: changed %v, m1 settled %v; want both", changed, st.settled("m1"))
	}

	a.fast["m1"], b.fast["m1"] = fastEntry{at: at(0)}, fastEntry{at: at(0)}
	st.forget([]string{"m1", "away"}, []string{"missed"})
	if len(st.local) != 0 || len(a.fast) != 0 || len(b.fast) != 0 {
		t.Fatalf("after forget: %d accounts, fast entries %d and %d; want none", len(st.local), len(a.fast), len(b.fast))
	}

	off := newSettling(false)
	off.handled("m2", nil, false, false, at(0))
	off.listed(at(1), false, nil)
	if off.settled("m2") {
		t.Fatal("settling off: m2 reads settled")
	}
}

// NATS's wildcards as the alone check reads other consumers' filters.
func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		filter, subject string
		want            bool
	}{
		{"chat.out.taken.c", "chat.out.taken.c", true},
		{"chat.out.>", "chat.out.taken.c", true},
		{"chat.out.*", "chat.out.taken.c", false},
		{"chat.out.*.*", "chat.out.taken.c", true},
		{"chat.*.taken.*", "chat.out.taken.c", true},
		{">", "chat.out.taken.c", true},
		{"chat.out.taken.c.>", "chat.out.taken.c", false},
		{"chat.out.taken", "chat.out.taken.c", false},
		{"chat.out.taken.c.d", "chat.out.taken.c", false},
	} {
		if got := subjectMatches(tc.filter, tc.subject); got != tc.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tc.filter, tc.subject, got, tc.want)
		}
	}
}

// The count of this node's own accounts, which tells watchAlone whether a
// listing is needed, follows every way an account comes and goes: the fast
// path's, a share's, a second fast path for the same id, and each drop.
func TestOwnAccountsCounted(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	a := &session{fast: map[string]fastEntry{}}
	st := newSettling(true)
	step := func(what string, want int) {
		t.Helper()
		n := 0
		for _, le := range st.local {
			if le.origin == "" {
				n++
			}
		}
		if st.own != n || n != want {
			t.Fatalf("after %s: own counted %d, accounts of this node's %d; want %d", what, st.own, n, want)
		}
	}
	for _, id := range []string{"p1", "p2", "s1", "old"} {
		st.handled(id, []*session{a}, false, false, now)
	}
	st.handled("old", []*session{a}, false, false, now.Add(-time.Hour)) // handled again: one account
	st.handledFor("n2", "shared1", []*session{a}, false, now)
	st.handledFor("n2", "shared2", []*session{a}, false, now)
	step("four of this node's and two shared", 4)
	st.forget(nil, []string{"p1", "shared1"}) // published; a shared id is not asked about, but goes
	step("forget of a published message", 3)
	st.forget([]string{"s1", "unknown"}, nil)
	step("forget of a skipped message", 2)
	st.forgetBefore(now.Add(-time.Minute))
	step("forgetBefore", 1)
	st.skippedBy("n2", []string{"shared2", "p2"}) // p2 is not n2's
	st.deliveredShared("p2")                      // nor shared
	step("a peer's announcement and a stream delivery", 1)
	st.forget(nil, []string{"p2"})
	step("the last of this node's forgotten", 0)
	if len(st.local) != 0 {
		t.Fatalf("accounts left: %v", st.local)
	}
}
