package api_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/fasthttp/websocket"
)

// testClock is a settable clock for Config.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A user whose connection was closed for abuse is refused 429 with
// Retry-After on the next upgrade until the wait is over, which doubles
// with each such close; other users connect as usual meanwhile.
func TestWSAbuseCloseMakesTheUserWait(t *testing.T) {
	clock := &testClock{t: time.Now()}
	e := mustEnv(t, func(c *api.Config) { c.Abuse.Rejects = 3; c.Now = clock.now })
	abuse := func() {
		c, _ := e.dial(t, "mallory", "d")
		for i := range 3 {
			c.sendJSON(map[string]any{"type": "shout", "n": i})
		}
		c.wantClose(4008)
	}
	refused := func(wantWait int) {
		t.Helper()
		url := e.ws + "?token=" + apitest.Token(t, testSecret, "mallory", "d")
		conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err == nil {
			conn.Close()
			t.Fatalf("mallory redialled at once after a 4008 and was let in")
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("redial after a 4008: %v (response %v), want 429", err, resp)
		}
		if got, _ := strconv.Atoi(resp.Header.Get("Retry-After")); got != wantWait {
			t.Errorf("Retry-After %q, want %d", resp.Header.Get("Retry-After"), wantWait)
		}
	}
	abuse()
	refused(1)
	e.dial(t, "alice", "d") // someone else is not held back
	clock.add(time.Second)
	abuse() // let in once the wait is over; abusing again doubles it
	refused(2)
	clock.add(time.Second)
	refused(1)
	clock.add(time.Second)
	e.dial(t, "mallory", "d")
}

// Repeating typing for one chat as fast as a client can is dropped, but
// each repeat costs a unit of the budget: the flood runs out of it and is
// closed 4008, rather than being read for free for ever.
func TestWSRepeatedTypingFloodIsClosed(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.Abuse.Wait = -1 })
	chat := e.mustGroup(t, "alice", "bob")
	c, _ := e.dial(t, "alice", "d")
	for range 3000 {
		if err := c.conn.WriteJSON(map[string]any{"type": "typing", "chat": chat}); err != nil {
			break // closed under us: what the test wants
		}
	}
	c.wantClose(4008)
}
