package push_test

import (
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
)

// probeConn is a recConn whose Flush, the socket write, first checks that
// the registry's lock is free: it asks the registry something from another
// goroutine and waits for the answer.
type probeConn struct {
	recConn
	r *push.Registry

	mu     sync.Mutex
	locked int // flushes made while the registry's lock was held
}

// lockWait bounds the wait for the registry's lock: free, it is taken in
// microseconds; held by the flush's own caller, never.
const lockWait = 5 * time.Second

func (c *probeConn) Flush() {
	got := make(chan struct{})
	go func() {
		c.r.InFlight()
		close(got)
	}()
	select {
	case <-got:
	case <-time.After(lockWait):
		c.mu.Lock()
		c.locked++
		c.mu.Unlock()
	}
	c.recConn.Flush()
}

func (c *probeConn) flushesUnderLock() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.locked
}

// A fan-out's socket writes wait until the registry's lock is released: a
// room of thousands is thousands of writes, which under the lock held up
// every other connection's acks, sends and fan-outs. Frames go out the
// fast path, the stream delivery, and a release of held frames at an ack.
func TestWritesWaitForTheLockToBeReleased(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second; c.MaxPending = 1 })
	var room []*probeConn
	var members []string
	for _, u := range []string{"bob", "carol", "dave", "erin"} {
		c := &probeConn{recConn: recConn{user: u}, r: r}
		if err := r.Attach(c); err != nil {
			t.Fatal(err)
		}
		room, members = append(room, c), append(members, u)
	}
	// The fast path's message reaches all but erin: one frame each, at
	// the budget of 1.
	fast := e.newMsg("alice")
	r.FastPath(&fast, members[:3])
	// The stream's message goes to erin at once and is held for the
	// others until their acks make room.
	_, _ = e.publish(t, "alice", "", members...)
	testwait.Until(t, "erin has the stream's message", func() bool { return len(room[3].received()) == 1 })
	for _, c := range room[:3] {
		if got := len(c.received()); got != 1 {
			t.Fatalf("%s has %d messages before its ack, want 1: the stream's is held", c.user, got)
		}
		r.Ack(c, []string{fast.ID})
	}
	for _, c := range room[:3] {
		testwait.Until(t, c.user+" has both messages", func() bool { return len(c.received()) == 2 })
	}
	for _, c := range room {
		if n := c.flushesUnderLock(); n > 0 {
			t.Errorf("%s: %d of its writes were made under the registry's lock, want none", c.user, n)
		}
		if n := c.unflushed(); n > 0 {
			t.Errorf("%s: %d frames handed to it were never written", c.user, n)
		}
	}
}
