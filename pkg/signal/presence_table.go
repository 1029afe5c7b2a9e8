package signal

import (
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

// presenceTable is one node's view of the presence bucket: which nodes hold
// a session of each user, and when each entry was last refreshed. It is the
// presence state machine, free of I/O: the watcher feeds it puts and
// deletes, a ticker feeds it the time (a dead node's entries vanish from
// the bucket without a delete a watcher could see, so expiry is decided
// here, with the bucket's TTL). Not safe for concurrent use.
type presenceTable struct {
	ttl time.Duration

	nodes    map[string]map[string]time.Time // user → node → last refresh
	lastSeen map[string]time.Time            // user → when the last entry went
}

func newPresenceTable(ttl time.Duration) *presenceTable {
	return &presenceTable{ttl: ttl, nodes: make(map[string]map[string]time.Time), lastSeen: make(map[string]time.Time)}
}

// put records node's entry for user, refreshed at; a user who had no entry
// comes online.
func (t *presenceTable) put(user, node string, at time.Time) (presenceChange, bool) {
	n := t.nodes[user]
	if n == nil {
		n = make(map[string]time.Time)
		t.nodes[user] = n
	}
	first := len(n) == 0
	if prev, ok := n[node]; !ok || at.After(prev) {
		n[node] = at
	}
	if !first {
		return presenceChange{}, false
	}
	return presenceChange{User: user, Online: true}, true
}

// remove drops node's entry for user at time at (a clean disconnect); the
// last entry gone makes the user offline, last seen at.
func (t *presenceTable) remove(user, node string, at time.Time) (presenceChange, bool) {
	n := t.nodes[user]
	if _, ok := n[node]; !ok {
		return presenceChange{}, false
	}
	delete(n, node)
	return t.goneIfEmpty(user, at)
}

// expire drops every entry not refreshed within the TTL before now (its
// node stopped refreshing: dead or cut off). The users left without an
// entry go offline, last seen at their last refresh.
func (t *presenceTable) expire(now time.Time) []presenceChange {
	var out []presenceChange
	for user, n := range t.nodes {
		var newest time.Time
		dropped := false
		for node, at := range n {
			if now.Sub(at) > t.ttl {
				delete(n, node)
				dropped = true
				if at.After(newest) {
					newest = at
				}
			}
		}
		if dropped {
			if c, ok := t.goneIfEmpty(user, newest); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

func (t *presenceTable) goneIfEmpty(user string, at time.Time) (presenceChange, bool) {
	if len(t.nodes[user]) > 0 {
		return presenceChange{}, false
	}
	delete(t.nodes, user)
	t.lastSeen[user] = at
	return presenceChange{User: user, LastSeen: at}, true
}

// lookup is what the table knows of user; a never-seen user is offline
// with no last_seen.
func (t *presenceTable) lookup(user string) chatd.Presence {
	if len(t.nodes[user]) > 0 {
		return chatd.Presence{Online: true}
	}
	return chatd.Presence{LastSeen: t.lastSeen[user]}
}
