package push_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
)

// Every recipient connection of one message is handed the same Outgoing,
// on the fast path and on the stream path, so the message is copied and
// its frame encoded once, not once per member of a group.
func TestRecipientsShareOneOutgoing(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	conns := []*recConn{{user: "bob", device: "phone"}, {user: "bob", device: "web"}, {user: "carol", device: "phone"}}
	for _, c := range conns {
		r.Attach(c)
	}
	sameOutgoing := func(path string, i int) *push.Outgoing {
		t.Helper()
		var first *push.Outgoing
		for _, c := range conns {
			c.mu.Lock()
			n := len(c.outs)
			var o *push.Outgoing
			if n > i {
				o = c.outs[i]
			}
			c.mu.Unlock()
			if o == nil {
				t.Fatalf("%s: %s/%s got %d frames, want %d", path, c.user, c.device, n, i+1)
			}
			if first == nil {
				first = o
			} else if o != first {
				t.Fatalf("%s: %s/%s was handed its own copy of the message, want the one shared Outgoing", path, c.user, c.device)
			}
		}
		return first
	}

	fast := e.newMsg("alice")
	r.FastPath(&fast, []string{"alice", "bob", "carol"})
	o := sameOutgoing("fast path", 0)
	if o.ID != fast.ID {
		t.Fatalf("fast path: outgoing carries %q, want %q", o.ID, fast.ID)
	}

	streamed := e.newMsg("alice")
	e.publishMsg(t, streamed, "web", "alice", "bob", "carol")
	testwait.Until(t, "stream delivery to all three", func() bool {
		for _, c := range conns {
			if len(c.received()) < 2 {
				return false
			}
		}
		return true
	})
	sameOutgoing("stream", 1)

	encodes := 0
	encode := func(m *chatd.Message) []byte { encodes++; return []byte(m.ID) }
	for range conns {
		if got := string(o.Frame(encode)); got != fast.ID {
			t.Fatalf("frame: got %q, want %q", got, fast.ID)
		}
	}
	if encodes != 1 {
		t.Fatalf("frame encoded %d times for %d connections, want once", encodes, len(conns))
	}
}
