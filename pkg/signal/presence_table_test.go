package signal

import (
	"slices"
	"testing"
	"time"
)

// The state machine: a user is online while a live node's current run
// holds an entry of theirs; offline when the last such entry goes (deleted
// cleanly, or its node's heartbeat lapsing after the TTL), last seen at the
// delete or the node's last beat.
func TestPresenceTable(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tb := newPresenceTable(10*time.Second, "self", 100)
	one := func(c presenceChange, ok bool) []presenceChange {
		if !ok {
			return nil
		}
		return []presenceChange{c}
	}
	online := func(u string) []presenceChange { return []presenceChange{{User: u, Online: true}} }
	offline := func(u string, s float64) []presenceChange { return []presenceChange{{User: u, LastSeen: at(s)}} }

	steps := []struct {
		name string
		do   func() []presenceChange
		want []presenceChange
	}{
		{"entry before its node's heartbeat: not yet online", func() []presenceChange { return one(tb.putEntry("u", "a", "a1", 1, at(0))) }, nil},
		{"the heartbeat: online", func() []presenceChange { return tb.beat("a", "a1", at(0)) }, online("u")},
		{"the heartbeat again: no change", func() []presenceChange { return tb.beat("a", "a1", at(2)) }, nil},
		{"second node: no change", func() []presenceChange {
			tb.beat("b", "b1", at(2))
			return one(tb.putEntry("u", "b", "b1", 2, at(2)))
		}, nil},
		{"one node's entry goes: still online", func() []presenceChange { return one(tb.removeEntry("u", "a", at(3))) }, nil},
		{"unknown entry removed: no change", func() []presenceChange { return one(tb.removeEntry("u", "zz", at(3))) }, nil},
		{"the last entry goes: offline", func() []presenceChange { return one(tb.removeEntry("u", "b", at(4))) }, offline("u", 4)},
		{"back: online", func() []presenceChange { return one(tb.putEntry("u", "a", "a1", 3, at(5))) }, online("u")},
		{"an entry of another run of a live node: not online", func() []presenceChange { return one(tb.putEntry("w", "a", "a0", 4, at(5))) }, nil},
	}
	for _, s := range steps {
		if got := s.do(); !slices.Equal(got, s.want) {
			t.Errorf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
	if p := tb.lookup("u"); !p.Online {
		t.Errorf("lookup u: got %+v, want online", p)
	}
	if p := tb.lookup("w"); p.Online {
		t.Errorf("lookup w (stale entry): got %+v, want offline", p)
	}

	// Node b keeps beating; node a's last beat was at 2: nothing changes
	// until the TTL has passed, then u goes offline, last seen at that beat.
	tb.beat("b", "b1", at(11))
	if got := tb.expire(at(12)); len(got) != 0 {
		t.Errorf("expire at the TTL: got %+v, want nothing yet", got)
	}
	if got := tb.expire(at(12.5)); !slices.Equal(got, offline("u", 2)) {
		t.Errorf("expire past the TTL: got %+v, want u offline last seen at 2 s", got)
	}
	if p := tb.lookup("u"); p.Online || !p.LastSeen.Equal(at(2)) {
		t.Errorf("lookup after expiry: got %+v", p)
	}
	if p := tb.lookup("never"); p.Online || !p.LastSeen.IsZero() {
		t.Errorf("never-seen user: got %+v, want offline without last_seen", p)
	}

	// Node a restarts with the same id: its old run's entries stay offline
	// and are stale; the new run's entry brings u back.
	if got := tb.beat("a", "a2", at(13)); len(got) != 0 {
		t.Errorf("new run's heartbeat: got %+v, want no change (its entries are the old run's)", got)
	}
	if got := one(tb.putEntry("u", "a", "a2", 9, at(13))); !slices.Equal(got, online("u")) {
		t.Errorf("new run's entry: got %+v, want u online", got)
	}
	if !tb.cleaner("a") || tb.cleaner("b") {
		t.Errorf("cleaner: a %v, b %v; want the smallest live id, a", tb.cleaner("a"), tb.cleaner("b"))
	}
	if got := tb.stale(); !slices.Equal(got, []staleEntry{{user: "w", node: "a", rev: 4}}) {
		t.Errorf("stale entries: got %+v, want w's entry of run a0", got)
	}
	if got := tb.stale(); len(got) != 0 {
		t.Errorf("stale entries, asked again: got %+v, want none (the marks are cleared)", got)
	}
}

// A node that shuts down says so by deleting its heartbeat: its users go
// offline at once, last seen then; a user on two nodes, one of which goes,
// stays online. A heartbeat that the bucket itself expired dates last_seen
// to its last beat.
func TestPresenceTableNodeGone(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tb := newPresenceTable(10*time.Second, "self", 100)
	tb.beat("a", "a1", at(0))
	tb.beat("b", "b1", at(0))
	tb.putEntry("u", "a", "a1", 1, at(0))
	tb.putEntry("v", "a", "a1", 2, at(0))
	tb.putEntry("v", "b", "b1", 3, at(0))

	got := tb.gone("a", at(1), false)
	if !slices.Equal(got, []presenceChange{{User: "u", LastSeen: at(1)}}) {
		t.Errorf("node a deleted its heartbeat: got %+v, want u offline at 1 s (v is on b too)", got)
	}
	if !tb.lookup("v").Online {
		t.Errorf("v: got %+v, want online", tb.lookup("v"))
	}
	if got := tb.stale(); len(got) != 2 {
		t.Errorf("stale after node a went: got %+v, want u's and v's entries of a", got)
	}

	tb.beat("b", "b1", at(5))
	if got := tb.gone("b", at(30), true); !slices.Equal(got, []presenceChange{{User: "v", LastSeen: at(5)}}) {
		t.Errorf("bucket expired b's heartbeat at 30 s: got %+v, want v last seen at b's last beat, 5 s", got)
	}
	if got := tb.gone("b", at(31), true); len(got) != 0 {
		t.Errorf("a heartbeat gone twice: got %+v, want nothing", got)
	}
}

// Keys name their kind: heartbeats and entries; anything else is ignored.
func TestParsePresenceKey(t *testing.T) {
	for _, tt := range []struct {
		key        string
		user, node string
		beat, ok   bool
	}{
		{"n.node-1", "", "node-1", true, true},
		{"u.alice.node-1", "alice", "node-1", false, true},
		{"u.alice", "", "", false, false},
		{"u..node-1", "", "", false, false},
		{"n.", "", "", true, false},
		{"n.a.b", "", "", true, false},
		{"alice.node-1", "", "", false, false},
	} {
		user, node, beat, ok := parseKey(tt.key)
		if ok != tt.ok || beat != tt.beat || (ok && (user != tt.user || node != tt.node)) {
			t.Errorf("parseKey(%q) = %q %q %v %v, want %q %q %v %v", tt.key, user, node, beat, ok, tt.user, tt.node, tt.beat, tt.ok)
		}
	}
}

// This node never takes itself for dead: its own heartbeat neither lapses
// by the clock (a busy watch loop may apply its beats late) nor goes with
// the bucket's expiry of it, and its own run's entries are never stale.
func TestPresenceTableKeepsItself(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tb := newPresenceTable(10*time.Second, "self", 100)
	tb.beat("self", "s1", t0)
	tb.putEntry("u", "self", "s1", 1, t0)
	if got := tb.expire(t0.Add(time.Minute)); len(got) != 0 {
		t.Errorf("expire a minute after this node's last beat: got %+v, want nothing", got)
	}
	if got := tb.gone("self", t0.Add(time.Minute), true); len(got) != 0 {
		t.Errorf("the bucket expired this node's heartbeat: got %+v, want nothing", got)
	}
	if !tb.lookup("u").Online {
		t.Errorf("u on this node: got %+v, want online", tb.lookup("u"))
	}
	tb.reload()
	tb.putEntry("u", "self", "s1", 1, t0)
	if got := tb.loaded(t0); len(got) != 0 {
		t.Errorf("a load that shows this node's entry: got %+v, want nothing", got)
	}
	if got := tb.stale(); len(got) != 0 {
		t.Errorf("stale entries of this node's own run: got %+v, want none", got)
	}
}

// A watch that restarts loads the bucket again: entries deleted while it
// was down (their markers expired, so it sees no delete) go from the
// table with their users' presence; entries the load shows stay.
func TestPresenceTableReload(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tb := newPresenceTable(10*time.Second, "self", 100)
	tb.beat("b", "b1", t0)
	tb.putEntry("bob", "b", "b1", 1, t0)
	tb.putEntry("ann", "b", "b1", 2, t0)
	tb.putEntry("ann", "c", "c1", 3, t0) // node c not heard: ann is online through b

	tb.reload()
	tb.beat("b", "b1", t0.Add(time.Second))
	tb.putEntry("ann", "b", "b1", 2, t0.Add(time.Second))
	got := tb.loaded(t0.Add(2 * time.Second))
	if want := []presenceChange{{User: "bob", LastSeen: t0.Add(2 * time.Second)}}; !slices.Equal(got, want) {
		t.Errorf("load without bob's entry: got %+v, want %+v", got, want)
	}
	if !tb.lookup("ann").Online || tb.lookup("bob").Online {
		t.Errorf("after the load: ann %+v, bob %+v; want ann online, bob offline", tb.lookup("ann"), tb.lookup("bob"))
	}
	if _, ok := tb.entries["ann"]["c"]; ok {
		t.Error("ann's entry of node c, not in the load, is still in the table")
	}
	if got := tb.loaded(t0.Add(3 * time.Second)); len(got) != 0 {
		t.Errorf("loaded again without a reload: got %+v, want nothing", got)
	}
}

// The table keeps the last_seen of at most maxSeen users, those seen going
// offline most recently: a user who comes back leaves it, and going
// offline again makes them the newest.
func TestPresenceTableLastSeenBound(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tb := newPresenceTable(10*time.Second, "self", 2)
	tb.beat("self", "s1", t0)
	session := func(user string, on, off int) {
		tb.putEntry(user, "self", "s1", 1, at(on))
		tb.removeEntry(user, "self", at(off))
	}
	session("a", 0, 1)
	session("b", 1, 2)
	session("a", 2, 3) // a is the newest again
	session("c", 3, 4) // b, the oldest, goes
	tests := []struct {
		user string
		want time.Time
	}{
		{"a", at(3)},
		{"b", time.Time{}},
		{"c", at(4)},
	}
	for _, tt := range tests {
		if got := tb.lookup(tt.user); got.Online || !got.LastSeen.Equal(tt.want) {
			t.Errorf("%s: got %+v, want offline last seen %v", tt.user, got, tt.want)
		}
	}
	tb.putEntry("c", "self", "s1", 2, at(5))
	if len(tb.lastSeen) != 1 || tb.seenOrder.Len() != 1 {
		t.Errorf("c back online: got %d entries (%d in order), want 1 (a)", len(tb.lastSeen), tb.seenOrder.Len())
	}
}

// A node is alive while its heartbeat was heard within the TTL; the view is
// current only while this node's own heartbeat came back within the TTL,
// so a stalled watch, which lets every heartbeat look lapsed, tells
// nothing.
func TestNodeAliveInACurrentView(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tb := newPresenceTable(10*time.Second, "self", 100)
	check := func(when string, now time.Time, node string, wantAlive, wantCurrent bool) {
		t.Helper()
		if alive, current := tb.alive(node, now); alive != wantAlive || current != wantCurrent {
			t.Fatalf("%s: alive(%s) = %v, current %v; want %v, %v", when, node, alive, current, wantAlive, wantCurrent)
		}
	}
	tb.beat("b", "b1", at(0))
	check("before this node's own heartbeat came back", at(1), "b", false, false)
	tb.beat("self", "s1", at(1))
	check("b's heartbeat 1 s old", at(1), "b", true, true)
	check("a node never heard", at(1), "c", false, true)
	tb.beat("self", "s1", at(9))
	check("b's heartbeat 11 s old, this node's 2 s", at(11), "b", false, true)
	check("this node's own heartbeat 12 s old", at(21), "b", false, false)
}

// The table remembers a heartbeat it saw lapse, by its TTL here or by the
// bucket's expiry, until the node beats again, leaves in order, or an hour
// passes; a node that left in order, or was never heard, has no lapse.
func TestPresenceTableRemembersALapse(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tb := newPresenceTable(10*time.Second, "self", 100)
	check := func(when, node string, wantAt time.Time, wantOK bool) {
		t.Helper()
		if got, ok := tb.lapsedSince(node); ok != wantOK || !got.Equal(wantAt) {
			t.Fatalf("%s: lapsedSince(%s) = %v, %v; want %v, %v", when, node, got, ok, wantAt, wantOK)
		}
	}
	tb.beat("a", "a1", at(0))
	tb.beat("b", "b1", at(0))
	tb.beat("c", "c1", at(0))
	tb.expire(at(5))
	check("a beating", "a", time.Time{}, false)
	tb.gone("c", at(6), false) // c says goodbye
	tb.expire(at(11))
	check("a's TTL ran out here", "a", at(0), true)
	check("c left in order", "c", time.Time{}, false)
	check("a node never heard", "d", time.Time{}, false)
	tb.beat("b", "b1", at(12))
	tb.gone("b", at(25), true) // the bucket expired it
	check("b expired by the bucket", "b", at(12), true)
	tb.beat("a", "a2", at(30)) // a back in a new run
	check("a beating again", "a", time.Time{}, false)
	tb.gone("b", at(40), false) // a late goodbye of b's
	check("b's goodbye after its lapse", "b", time.Time{}, false)
	tb.expire(at(50))
	check("a lapsed again", "a", at(30), true)
	tb.expire(at(30).Add(lapsedMemory + time.Second))
	check("an hour after a's lapse", "a", time.Time{}, false)
}
