package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/fasthttp/websocket"
)

// A client that reads its answers but sends frames faster than the server
// writes them (hundreds of pings in one go) is held back, not closed with
// 4001 as if it had stopped reading: every ping gets its pong, in order, and
// the connection stays open.
func TestBurstOfFramesFromAReadingClient(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, func(c *api.Config) {
		// The budget is not what this looks at (its own tests are).
		c.Limits.RatePerSecond, c.Limits.RateBurst = 1<<20, 1<<20
	})
	alice, _ := e.dial(t, "alice", "d1")
	const n = 2000
	pongs := make(chan error, 1)
	go func() {
		for i := range n {
			_ = alice.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, b, err := alice.conn.ReadMessage()
			if err != nil {
				pongs <- err
				return
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || m["type"] != "pong" {
				t.Errorf("answer %d: %s, want a pong", i, b)
			}
		}
		pongs <- nil
	}()
	ping := []byte(`{"type":"ping"}`)
	for i := range n {
		if err := alice.conn.WriteMessage(websocket.TextMessage, ping); err != nil {
			t.Fatalf("ping %d: %v; the server closed the connection: %v", i, err, <-pongs)
		}
	}
	if err := <-pongs; err != nil {
		t.Fatalf("reading %d pongs: %v", n, err)
	}
}
