package signal

import (
	"container/list"
	"maps"
	"time"

	"github.com/chatd/chatd"
)

// presenceChange is a user's transition, cluster-wide: the first device
// connected somewhere, or the last one went away.
type presenceChange struct {
	User     string
	Online   bool
	LastSeen time.Time // when offline
}

// nodeBeat is what a node's heartbeat says: which run of the node it is
// (its incarnation, new on every start) and when it was last heard.
type nodeBeat struct {
	inc string
	at  time.Time
}

// userEntry is one user's entry of one node: the incarnation that wrote it
// and the entry's revision in the bucket (what a clean-up deletes against).
type userEntry struct {
	inc string
	rev uint64
}

// staleEntry is a user entry no live node stands behind: its node died, or
// restarted and wrote nothing for this user in its new run.
type staleEntry struct {
	user, node string
	rev        uint64
}

// presenceTable is one node's view of the presence bucket: each node's
// heartbeat, and each user's entries. A user is online while some node
// whose heartbeat is alive holds an entry of theirs written by that node's
// current run. So a node's users live and die with its one heartbeat: the
// entries are written once per session, not refreshed, and a dead node
// (whose heartbeat stops with no goodbye a watcher could see) takes all its
// users offline when its heartbeat lapses here, after the TTL.
//
// It is the presence state machine, free of I/O: the watcher feeds it the
// bucket's puts and deletes, a ticker feeds it the time. Not safe for
// concurrent use.
type presenceTable struct {
	ttl  time.Duration
	self string // this node: alive while it runs, whatever the bucket says

	beats map[string]nodeBeat // node → its live heartbeat
	// lapsed holds, for each node whose heartbeat this view saw lapse
	// (rather than leave in order) and not come back, when it was last
	// heard; kept for lapsedMemory (see NodeLapsed).
	lapsed  map[string]time.Time
	entries map[string]map[string]userEntry // user → node → entry
	byNode  map[string]map[string]struct{}  // node → users with an entry of it
	online  map[string]struct{}             // users online as last reported
	// lastSeen holds when users this node saw go offline last went: at
	// most maxSeen of them, the oldest let go first (their time is in
	// PostgreSQL, where Lookup finds it). Each element of seenOrder, oldest
	// first, is a seenEntry; a user who comes back online leaves it.
	lastSeen  map[string]*list.Element
	seenOrder *list.List
	maxSeen   int
	// recheck holds the nodes whose entries may have gone stale since the
	// last clean-up (the node died or restarted, or the table was loaded).
	recheck map[string]struct{}
	// unconfirmed, during a watch's initial load, holds the entries (node →
	// users) the load has not shown yet (see reload).
	unconfirmed map[string]map[string]struct{}
}

// seenEntry is one element of presenceTable.seenOrder.
type seenEntry struct {
	user string
	at   time.Time
}

// newPresenceTable returns a table that keeps the last_seen of at most
// maxSeen users (at least one).
func newPresenceTable(ttl time.Duration, self string, maxSeen int) *presenceTable {
	return &presenceTable{
		ttl: ttl, self: self, beats: make(map[string]nodeBeat), lapsed: make(map[string]time.Time),
		entries: make(map[string]map[string]userEntry), byNode: make(map[string]map[string]struct{}),
		online: make(map[string]struct{}), lastSeen: make(map[string]*list.Element),
		seenOrder: list.New(), maxSeen: max(maxSeen, 1),
		recheck: make(map[string]struct{}),
	}
}

// seen records that user went offline at at, letting go of the user seen
// longest ago beyond maxSeen: every user who ever connected would stay
// here otherwise.
func (t *presenceTable) seen(user string, at time.Time) {
	if el, ok := t.lastSeen[user]; ok {
		el.Value = seenEntry{user: user, at: at}
		t.seenOrder.MoveToBack(el)
		return
	}
	t.lastSeen[user] = t.seenOrder.PushBack(seenEntry{user: user, at: at})
	if t.seenOrder.Len() > t.maxSeen {
		oldest := t.seenOrder.Front()
		t.seenOrder.Remove(oldest)
		delete(t.lastSeen, oldest.Value.(seenEntry).user)
	}
}

// unseen drops user's last_seen: they are online, and going offline again
// records a new one.
func (t *presenceTable) unseen(user string) {
	if el, ok := t.lastSeen[user]; ok {
		t.seenOrder.Remove(el)
		delete(t.lastSeen, user)
	}
}

// isOnline is whether some live node's current run holds an entry of user.
func (t *presenceTable) isOnline(user string) bool {
	for node, e := range t.entries[user] {
		if b, ok := t.beats[node]; ok && b.inc == e.inc {
			return true
		}
	}
	return false
}

// settle compares user's presence with what was last reported and returns
// the transition, if any; an offline one is last seen at.
func (t *presenceTable) settle(user string, at time.Time) (presenceChange, bool) {
	now := t.isOnline(user)
	_, was := t.online[user]
	switch {
	case now && !was:
		t.online[user] = struct{}{}
		t.unseen(user)
		return presenceChange{User: user, Online: true}, true
	case !now && was:
		delete(t.online, user)
		t.seen(user, at)
		return presenceChange{User: user, LastSeen: at}, true
	}
	return presenceChange{}, false
}

// putEntry records node's entry for user, written by run inc at revision
// rev (at is when it was seen).
func (t *presenceTable) putEntry(user, node, inc string, rev uint64, at time.Time) (presenceChange, bool) {
	n := t.entries[user]
	if n == nil {
		n = make(map[string]userEntry, 1)
		t.entries[user] = n
	}
	n[node] = userEntry{inc: inc, rev: rev}
	delete(t.unconfirmed[node], user)
	u := t.byNode[node]
	if u == nil {
		u = make(map[string]struct{})
		t.byNode[node] = u
	}
	u[user] = struct{}{}
	if b, ok := t.beats[node]; ok && b.inc != inc {
		t.recheck[node] = struct{}{} // another run's entry: a clean-up's
	}
	return t.settle(user, at)
}

// removeEntry drops node's entry for user (a clean disconnect, or a
// clean-up), seen at at.
func (t *presenceTable) removeEntry(user, node string, at time.Time) (presenceChange, bool) {
	n := t.entries[user]
	if _, ok := n[node]; !ok {
		return presenceChange{}, false
	}
	delete(n, node)
	if len(n) == 0 {
		delete(t.entries, user)
	}
	if u := t.byNode[node]; u != nil {
		delete(u, user)
		if len(u) == 0 {
			delete(t.byNode, node)
		}
	}
	return t.settle(user, at)
}

// beat records node's heartbeat from run inc at at. A node first heard, or
// heard in a new run, changes the presence of the users with entries of it.
func (t *presenceTable) beat(node, inc string, at time.Time) []presenceChange {
	delete(t.lapsed, node)
	prev, ok := t.beats[node]
	if ok && prev.inc == inc {
		if at.After(prev.at) {
			t.beats[node] = nodeBeat{inc: inc, at: at}
		}
		return nil
	}
	t.beats[node] = nodeBeat{inc: inc, at: at}
	if ok {
		t.recheck[node] = struct{}{} // the previous run's entries are stale
	}
	return t.settleNode(node, prev.at)
}

// gone drops node's heartbeat, deleted at at. A clean shutdown deletes it
// (lapsed false): its users are last seen at at. The bucket deleting a
// heartbeat whose TTL ran out (lapsed) says what expire would have said
// soon: its users were last seen at its last beat.
//
// This node's own heartbeat is not dropped: it is alive while it runs, and
// its users with it. If its beat lapsed in the bucket (its writes failed
// for a TTL), the other nodes take it for dead and delete its entries; it
// puts them back when it sees that.
func (t *presenceTable) gone(node string, at time.Time, lapsed bool) []presenceChange {
	if !lapsed {
		delete(t.lapsed, node) // it left in order
	}
	b, ok := t.beats[node]
	if !ok || node == t.self {
		return nil
	}
	if lapsed {
		at = b.at
		t.lapsed[node] = b.at
	}
	delete(t.beats, node)
	t.recheck[node] = struct{}{}
	return t.settleNode(node, at)
}

// alive reports whether node's heartbeat was heard within the TTL before
// now, and whether this view is current: this node's own heartbeat, which
// it writes every refresh, came back through the watch within the TTL. A
// stalled watch lets every other heartbeat look lapsed; it is not current.
func (t *presenceTable) alive(node string, now time.Time) (alive, current bool) {
	self, ok := t.beats[t.self]
	if !ok || now.Sub(self.at) > t.ttl {
		return false, false
	}
	b, ok := t.beats[node]
	return ok && now.Sub(b.at) <= t.ttl, true
}

// lapsedMemory is how long the table remembers a heartbeat that lapsed: well
// past the 10 minutes after which JetStream drops a dead node's consumer,
// and so past any fence that memory could still serve.
const lapsedMemory = time.Hour

// lapsedSince reports when node was last heard, if this view saw its
// heartbeat lapse and it has not beaten or left in order since.
func (t *presenceTable) lapsedSince(node string) (time.Time, bool) {
	at, ok := t.lapsed[node]
	return at, ok
}

// expire drops every other node's heartbeat not heard within the TTL
// before now (its node stopped beating: dead or cut off). Its users who
// have no other live node go offline, last seen at its last beat.
func (t *presenceTable) expire(now time.Time) []presenceChange {
	var out []presenceChange
	for node, at := range t.lapsed {
		if now.Sub(at) > lapsedMemory {
			delete(t.lapsed, node)
		}
	}
	for node, b := range t.beats {
		if node != t.self && now.Sub(b.at) > t.ttl {
			delete(t.beats, node)
			t.lapsed[node] = b.at
			t.recheck[node] = struct{}{}
			out = append(out, t.settleNode(node, b.at)...)
		}
	}
	return out
}

// settleNode settles every user with an entry of node; offline ones are
// last seen at.
func (t *presenceTable) settleNode(node string, at time.Time) []presenceChange {
	var out []presenceChange
	for user := range t.byNode[node] {
		if c, ok := t.settle(user, at); ok {
			out = append(out, c)
		}
	}
	return out
}

// reload starts a watch's initial load: every entry the table holds is
// unconfirmed until the load shows it again. A watch that restarts after
// NATS failed it missed what happened meanwhile, and a delete's marker
// expires (after the TTL): without this, an entry deleted while the watch
// was down for longer would keep its user online here for good.
func (t *presenceTable) reload() {
	t.unconfirmed = make(map[string]map[string]struct{}, len(t.byNode))
	for node, users := range t.byNode {
		t.unconfirmed[node] = maps.Clone(users)
	}
}

// loaded ends the initial load: the entries it did not show are dropped
// (their users' transitions returned, last seen at at), and every node is
// marked for a clean-up check, since entries of nodes that never beat
// again are there to be found.
func (t *presenceTable) loaded(at time.Time) []presenceChange {
	var out []presenceChange
	for node, users := range t.unconfirmed {
		for user := range users {
			if c, ok := t.removeEntry(user, node, at); ok {
				out = append(out, c)
			}
		}
	}
	t.unconfirmed = nil
	for node := range t.byNode {
		t.recheck[node] = struct{}{}
	}
	return out
}

// cleaner reports whether self is the live node that deletes stale
// entries: the one with the smallest id, so one node does it, not all.
// Nodes whose views differ for a moment may both clean; the deletes are
// conditional on the entry's revision, so that is harmless.
func (t *presenceTable) cleaner(self string) bool {
	if _, ok := t.beats[self]; !ok {
		return false
	}
	for node := range t.beats {
		if node < self {
			return false
		}
	}
	return true
}

// stale returns the entries of the nodes marked for a check that no live
// run stands behind, and clears the marks.
func (t *presenceTable) stale() []staleEntry {
	var out []staleEntry
	for node := range t.recheck {
		b, live := t.beats[node]
		for user := range t.byNode[node] {
			e := t.entries[user][node]
			if !live || e.inc != b.inc {
				out = append(out, staleEntry{user: user, node: node, rev: e.rev})
			}
		}
	}
	clear(t.recheck)
	return out
}

// lookup is what the table knows of user; a user never seen here, or let
// go of, is offline with no last_seen.
func (t *presenceTable) lookup(user string) chatd.Presence {
	if _, ok := t.online[user]; ok {
		return chatd.Presence{Online: true}
	}
	if el, ok := t.lastSeen[user]; ok {
		return chatd.Presence{LastSeen: el.Value.(seenEntry).at}
	}
	return chatd.Presence{}
}
