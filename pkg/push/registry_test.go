package push_test

import (
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/chatd/chatd/pkg/push"
)

// mustLocalRegistry is a registry without JetStream (the fast path only):
// enough for registering and looking up connections.
func mustLocalRegistry(t *testing.T) *push.Registry {
	t.Helper()
	r, err := push.New(push.Config{NodeID: "local", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustAttach(t *testing.T, r *push.Registry, c push.Conn) {
	t.Helper()
	if err := r.Attach(c); err != nil {
		t.Fatalf("attach %s/%s: %v", c.User(), c.Device(), err)
	}
}

// sameConns reports whether got holds exactly want, in any order.
func sameConns(got []push.Conn, want ...push.Conn) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(c push.Conn) bool { return !slices.Contains(got, c) })
}

func TestRegistryLooksUpConnectionsByUser(t *testing.T) {
	r := mustLocalRegistry(t)
	phone := &recConn{user: "alice", device: "phone"}
	web := &recConn{user: "alice", device: "web"}
	bob := &recConn{user: "bob", device: "phone"}
	for _, c := range []push.Conn{phone, web, bob} {
		mustAttach(t, r, c)
	}
	if got := r.Conns("alice"); !sameConns(got, phone, web) {
		t.Fatalf("alice's conns: got %v, want phone and web", got)
	}
	if got := r.AllConns(); !sameConns(got, phone, web, bob) {
		t.Fatalf("all conns: got %v, want 3", got)
	}
	if got := r.Conns("carol"); len(got) != 0 {
		t.Fatalf("carol's conns: got %v, want none", got)
	}
	if got := r.Conns("bob", "carol", "alice"); !sameConns(got, phone, web, bob) {
		t.Fatalf("bob's, carol's and alice's conns: got %v, want all 3", got)
	}

	r.Detach(phone)
	r.Detach(phone) // no longer registered: a no-op
	if got := r.Conns("alice"); !sameConns(got, web) {
		t.Fatalf("alice's conns after the phone left: got %v, want web", got)
	}
	if !r.Withdraw(web, push.ReasonIdle) || web.closedWith() != push.ReasonIdle {
		t.Fatalf("withdraw web: closed with %v, want %v", web.closedWith(), push.ReasonIdle)
	}
	if got, n := r.Conns("alice"), r.Connections(); len(got) != 0 || n != 1 {
		t.Fatalf("after alice left: her conns %v, %d registered; want none and 1", got, n)
	}
}

// A new session of the same user and device replaces the old one in every
// lookup, and the user stays present throughout.
func TestRegistrySupersededConnectionLeavesLookups(t *testing.T) {
	r := mustLocalRegistry(t)
	old := &recConn{user: "alice", device: "phone"}
	mustAttach(t, r, old)
	cur := &recConn{user: "alice", device: "phone"}
	mustAttach(t, r, cur)
	if got := old.closedWith(); got != push.ReasonSuperseded {
		t.Fatalf("old session closed with %v, want %v", got, push.ReasonSuperseded)
	}
	if got := r.AllConns(); !sameConns(got, cur) {
		t.Fatalf("all conns: got %v, want only the new session", got)
	}
	r.Detach(old) // its handler ending later changes nothing
	if got := r.Conns("alice"); !sameConns(got, cur) {
		t.Fatalf("alice's conns after the old session's detach: got %v, want the new session", got)
	}
	if got, want := old.presenceCalls(), []bool{true}; !slices.Equal(got, want) {
		t.Fatalf("old session told %v, want %v", got, want)
	}
	if got := cur.presenceCalls(); len(got) != 0 {
		t.Fatalf("new session told %v, want nothing (alice never left)", got)
	}
}

// UserPresent is told of a user's first connection and of the last one
// leaving, whichever way it leaves, and of nothing in between.
func TestRegistryTellsFirstAndLastConnectionOfAUser(t *testing.T) {
	r := mustLocalRegistry(t)
	phone := &recConn{user: "alice", device: "phone"}
	web := &recConn{user: "alice", device: "web"}
	mustAttach(t, r, phone)
	mustAttach(t, r, web)
	r.Detach(phone)
	r.Withdraw(web, push.ReasonOverloaded)
	again := &recConn{user: "alice", device: "phone"}
	mustAttach(t, r, again)
	r.Detach(again)
	for _, tc := range []struct {
		name string
		conn *recConn
		want []bool
	}{
		{"first phone", phone, []bool{true}},
		{"web, the last to leave", web, []bool{false}},
		{"phone again", again, []bool{true, false}},
	} {
		if got := tc.conn.presenceCalls(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: told %v, want %v", tc.name, got, tc.want)
		}
	}
}

// presenceLog records one user's UserPresent calls across all of the
// user's connections, in the order the registry made them.
type presenceLog struct {
	mu  sync.Mutex
	got []bool
}

type loggedConn struct {
	user, device string
	log          *presenceLog
}

func (c *loggedConn) User() string                { return c.user }
func (c *loggedConn) Device() string              { return c.device }
func (c *loggedConn) Deliver(*push.Outgoing) bool { return true }
func (c *loggedConn) Flush()                      {}
func (c *loggedConn) Close(push.Reason)           {}
func (c *loggedConn) UserPresent(present bool) {
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	c.log.got = append(c.log.got, present)
}

// Sessions of a few users come and go on many goroutines while others look
// them up: every user's presence changes alternate, starting present and
// ending gone, and the registry ends empty.
func TestRegistryConcurrentAttachDetachAndLookup(t *testing.T) {
	r := mustLocalRegistry(t)
	const users, devices, rounds = 3, 4, 200
	logs := make([]*presenceLog, users)
	for u := range logs {
		logs[u] = &presenceLog{}
	}
	var wg sync.WaitGroup
	for u := range users {
		for d := range devices {
			wg.Go(func() {
				user := "u" + strconv.Itoa(u)
				for i := range rounds {
					c := &loggedConn{user: user, device: "d" + strconv.Itoa(d%2), log: logs[u]}
					if err := r.Attach(c); err != nil {
						t.Error(err)
						return
					}
					for _, got := range r.Conns(user) {
						if got.User() != user {
							t.Errorf("Conns(%s) holds a connection of %s", user, got.User())
						}
					}
					if i%2 == 0 {
						r.Detach(c)
					} else {
						r.Withdraw(c, push.ReasonIdle)
					}
				}
			})
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds {
			_ = r.AllConns()
		}
	}()
	wg.Wait()
	if n := r.Connections(); n != 0 {
		t.Fatalf("%d connections left registered, want 0", n)
	}
	for u, l := range logs {
		if len(l.got) == 0 || len(l.got)%2 != 0 {
			t.Fatalf("u%d: %d presence changes, want an even number above 0", u, len(l.got))
		}
		for i, present := range l.got {
			if present != (i%2 == 0) {
				t.Fatalf("u%d: presence change %d is %v, want them alternating from true: %v", u, i, present, l.got)
			}
		}
	}
}
