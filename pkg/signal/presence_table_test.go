package signal

import (
	"testing"
	"time"
)

// The state machine: online on the first node's entry, offline only when
// the last one goes (deleted cleanly or expired after the TTL), with
// last_seen the delete's time or the dead entry's last refresh.
func TestPresenceTable(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tb := newPresenceTable(10 * time.Second)

	type step struct {
		name string
		do   func() (presenceChange, bool)
		want presenceChange
		ok   bool
	}
	steps := []step{
		{"first entry: online", func() (presenceChange, bool) { return tb.put("u", "a", at(0)) }, presenceChange{User: "u", Online: true}, true},
		{"second node: no change", func() (presenceChange, bool) { return tb.put("u", "b", at(1)) }, presenceChange{}, false},
		{"refresh: no change", func() (presenceChange, bool) { return tb.put("u", "a", at(3)) }, presenceChange{}, false},
		{"one node leaves: still online", func() (presenceChange, bool) { return tb.remove("u", "a", at(4)) }, presenceChange{}, false},
		{"unknown entry removed: no change", func() (presenceChange, bool) { return tb.remove("u", "zz", at(4)) }, presenceChange{}, false},
		{"last node leaves: offline", func() (presenceChange, bool) { return tb.remove("u", "b", at(5)) }, presenceChange{User: "u", LastSeen: at(5)}, true},
		{"back: online", func() (presenceChange, bool) { return tb.put("u", "a", at(6)) }, presenceChange{User: "u", Online: true}, true},
	}
	for _, s := range steps {
		got, ok := s.do()
		if ok != s.ok || got != s.want {
			t.Errorf("%s: got %+v %v, want %+v %v", s.name, got, ok, s.want, s.ok)
		}
	}
	if p := tb.lookup("u"); !p.Online {
		t.Errorf("lookup u: got %+v, want online", p)
	}

	// Node a dies: its last refresh was at 6; nothing changes until the TTL
	// has passed, then u goes offline, last seen at that refresh.
	if got := tb.expire(at(16)); len(got) != 0 {
		t.Errorf("expire at the TTL: got %+v, want nothing yet", got)
	}
	got := tb.expire(at(16.5))
	if len(got) != 1 || got[0] != (presenceChange{User: "u", LastSeen: at(6)}) {
		t.Errorf("expire past the TTL: got %+v, want u offline last seen at 6 s", got)
	}
	if p := tb.lookup("u"); p.Online || !p.LastSeen.Equal(at(6)) {
		t.Errorf("lookup after expiry: got %+v", p)
	}
	if p := tb.lookup("never"); p.Online || !p.LastSeen.IsZero() {
		t.Errorf("never-seen user: got %+v, want offline without last_seen", p)
	}

	// A user on two nodes, one of which dies, stays online.
	tb.put("v", "a", at(20))
	tb.put("v", "b", at(20))
	tb.put("v", "b", at(28))
	if got := tb.expire(at(31)); len(got) != 0 {
		t.Errorf("one of two nodes expired: got %+v, want no change", got)
	}
	if p := tb.lookup("v"); !p.Online {
		t.Errorf("v: got %+v, want online", p)
	}
}
