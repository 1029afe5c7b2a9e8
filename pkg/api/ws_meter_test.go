package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
)

// flood writes frames to c from its own goroutine (the server may close
// the socket under it, so a failed write just ends it) and returns a
// channel closed when it is done. The test reads meanwhile.
func (c *wsc) flood(frames [][]byte) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, f := range frames {
			if err := c.conn.WriteMessage(websocket.TextMessage, f); err != nil {
				return
			}
		}
	}()
	return done
}

// readUntil reads frames until the server closes (its code is returned) or
// until stop says the frames read are all that will come (code 0 then).
func (c *wsc) readUntil(stop func(frames []map[string]any) bool) (int, []map[string]any) {
	c.t.Helper()
	var frames []map[string]any
	for !stop(frames) {
		_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, frames
			}
			c.t.Fatalf("read after %d frames: %v, want a frame or a close", len(frames), err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		frames = append(frames, m)
	}
	return 0, frames
}

// lookups is how many connections the store's pool has handed out: every
// query the API makes (a member lookup is one) takes one.
func (e *env) lookups() int64 { return e.store.Pool().Stat().AcquireCount() }

// A connection that sends typing frames for thousands of chats it is not in
// is closed 4008 after a bounded number of store lookups, and a connection
// of another user is not touched by it.
func TestWSTypingFloodIsBoundedAndClosed(t *testing.T) {
	const chats, abuse = 2000, 50
	e := mustEnv(t, func(c *api.Config) { c.Abuse.Rejects = abuse })
	chat := e.mustGroup(t, "bob", "carol")
	bob, _ := e.dial(t, "bob", "")
	carol, _ := e.dial(t, "carol", "")
	alice, _ := e.dial(t, "alice", "")

	frames := make([][]byte, chats)
	for i := range frames {
		frames[i] = []byte(`{"type":"typing","chat":"flood-` + strconv.Itoa(i) + `"}`)
	}
	before := e.lookups()
	done := alice.flood(frames)
	code, got := alice.readUntil(func(f []map[string]any) bool { return len(f) == chats })
	<-done
	lookups := e.lookups() - before
	t.Logf("typing for %d chats: %d store lookups, %d frames before close %d", chats, lookups, len(got), code)
	if code != 4008 {
		t.Errorf("typing for %d chats: close code %d after %d frames, want 4008", chats, code, len(got))
	}
	if lookups > abuse {
		t.Errorf("typing for %d chats: got %d store lookups, want at most %d", chats, lookups, abuse)
	}

	bob.sendJSON(map[string]any{"type": "typing", "chat": chat})
	if f := carol.nextOf("typing"); f["user"] != "bob" {
		t.Errorf("carol got %v, want bob's typing", f)
	}
	bob.sendJSON(sendFrame(chat, "k1", "still here"))
	if f := bob.nextOf("accepted"); f["cid"] != "k1" {
		t.Errorf("bob got %v, want accepted k1", f)
	}
}

// Typing frames take from the connection's budget like sends: past it
// they are dropped (the contract gives typing no answer but the
// rejections it names) and count toward the abuse close.
func TestWSTypingChargedToBudget(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.RatePerSecond, c.Limits.RateBurst = 1, 2
		c.Abuse.Rejects = 3
	})
	var chats []string
	for range 5 {
		chats = append(chats, e.mustGroup(t, "alice", "bob"))
	}
	alice, _ := e.dial(t, "alice", "")
	bob, _ := e.dial(t, "bob", "")
	for _, chat := range chats {
		alice.sendJSON(map[string]any{"type": "typing", "chat": chat})
	}
	if frames := alice.wantClose(4008); len(frames) != 0 {
		t.Errorf("alice got %v before the close, want nothing", frames)
	}
	for i := range 2 {
		if f := bob.nextOf("typing"); f["chat"] != chats[i] {
			t.Errorf("bob's typing frame %d: %v, want chat %s", i, f, chats[i])
		}
	}
	bob.sendJSON(map[string]any{"type": "ping"})
	if f := bob.next(); f["type"] != "pong" {
		t.Errorf("bob got %v, want only 2 typing frames and then the pong", f)
	}
}

// Ack, auth and ping frames take from the budget too: a connection that
// floods them is answered rate_limited and then closed 4008.
func TestWSEveryFrameIsCharged(t *testing.T) {
	const n = 400
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("01HNOSUCHMESSAGE%09d", i)
	}
	ack, _ := json.Marshal(map[string]any{"type": "ack", "ids": ids})
	tests := []struct {
		name  string
		frame func(t *testing.T) []byte
	}{
		{"ack", func(*testing.T) []byte { return ack }},
		{"ping", func(*testing.T) []byte { return []byte(`{"type":"ping"}`) }},
		{"auth", func(t *testing.T) []byte {
			return []byte(`{"type":"auth","token":"` + apitest.Token(t, testSecret, "alice", "") + `"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEnv(t, func(c *api.Config) {
				c.Limits.RatePerSecond, c.Limits.RateBurst = 1, 1
				c.Abuse.Rejects = 3
			})
			c, _ := e.dial(t, "alice", "")
			frames := make([][]byte, n)
			f := tt.frame(t)
			for i := range frames {
				frames[i] = f
			}
			done := c.flood(frames)
			code, got := c.readUntil(func(f []map[string]any) bool { return len(f) == n })
			<-done
			if code != 4008 {
				t.Fatalf("%d %s frames: close code %d after %d frames, want 4008", n, tt.name, code, len(got))
			}
			if len(got) == 0 {
				t.Fatal("closed with no rejection before it")
			}
			if last := got[len(got)-1]; last["type"] != "rejected" || last["code"] != "rate_limited" {
				t.Errorf("last frame before the close: %v, want rejected rate_limited", last)
			}
		})
	}
}

// An ack frame may carry at most 1000 ids; more is rejected too_large and
// acks nothing, and exactly the maximum passes.
func TestWSAckIDsCapped(t *testing.T) {
	const maxIDs = wire.MaxAckIDs
	e := mustEnv(t, func(c *api.Config) { c.Limits.MaxFrameBytes = 64 << 10 })
	c, _ := e.dial(t, "alice", "")
	ack := func(n int) map[string]any {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("01HNOSUCHMESSAGE%09d", i)
		}
		return map[string]any{"type": "ack", "ids": ids}
	}
	c.sendJSON(ack(maxIDs + 1))
	c.sendJSON(map[string]any{"type": "ping"})
	if f := c.next(); f["type"] != "rejected" || f["code"] != "too_large" || f["cid"] != "" || !strings.Contains(fmt.Sprint(f["error"]), strconv.Itoa(maxIDs)) {
		t.Errorf("ack of %d ids: got %v, want rejected too_large with cid \"\" naming the limit", maxIDs+1, f)
	} else {
		c.nextOf("pong")
	}
	c.sendJSON(ack(maxIDs))
	c.sendJSON(map[string]any{"type": "ping"})
	if f := c.next(); f["type"] != "pong" {
		t.Errorf("ack of %d ids: got %v, want no answer (then the pong)", maxIDs, f)
	}
}

// The abuse rule counts rejections of every kind, not only rate_limited:
// a client that keeps sending what is refused is closed 4008, and one
// frame carried out (here an accepted send) ends the streak.
func TestWSRepeatedRejectionsClose4008(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.Abuse.Rejects = 3; c.Abuse.Wait = -1 })
	other := e.mustGroup(t, "carol")
	var mine string // each case's own chat, set below
	tests := []struct {
		name  string
		frame func(i int) map[string]any
	}{
		{"send to a chat of others", func(i int) map[string]any { return sendFrame(other, "f"+strconv.Itoa(i), "x") }},
		{"send to an unknown chat", func(i int) map[string]any { return sendFrame("nochat", "u"+strconv.Itoa(i), "x") }},
		{"invalid frame", func(int) map[string]any { return map[string]any{"type": "shout"} }},
		{"read of an unknown message", func(int) map[string]any {
			return map[string]any{"type": "read", "chat": mine, "upto": "01HNOSUCHMESSAGE000000000"}
		}},
	}
	for i, tt := range tests {
		// A chat of each case's own: an accepted send of an earlier case
		// may still reach this case's device live through the stream.
		mine = e.mustGroup(t, "alice")
		t.Run(tt.name, func(t *testing.T) {
			c, _ := e.dial(t, "alice", "d"+strconv.Itoa(i))
			// Two refused, one accepted, two refused: the accepted send
			// ends the first streak, so the connection stays open.
			for i := range 2 {
				c.sendJSON(tt.frame(i))
				c.nextOf("rejected")
			}
			c.sendJSON(sendFrame(mine, "ok"+strconv.Itoa(i), "fine"))
			c.nextOf("accepted")
			for i := 2; i < 4; i++ {
				c.sendJSON(tt.frame(i))
				c.nextOf("rejected")
			}
			// The third in a row closes it.
			c.sendJSON(tt.frame(4))
			frames := c.wantClose(4008)
			if len(frames) != 1 || frames[0]["type"] != "rejected" {
				t.Errorf("frames before the close: %v, want the one rejection", frames)
			}
		})
	}
}
