package api_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/fasthttp/websocket"
)

// clientCodes are the codes a `rejected` may carry for a client's own bad
// frame (docs/protocol.md, "WebSocket details"); overloaded, unavailable
// and internal are the server's state, never an answer to bad input.
var clientCodes = map[string]bool{
	"invalid": true, "forbidden": true, "not_found": true, "too_large": true,
	"rate_limited": true, "cid_conflict": true, "conflict": true, "too_many_members": true,
}

// Every client frame type, each of its fields set to each odd value, is
// answered as the protocol says for JSON that is not a valid frame: a
// `rejected` with a client's code, or carried out, and the connection stays
// open (only frames that are not JSON close it). Meanwhile another user's
// connection is untouched: the sender's last valid message reaches it.
func TestOddFramesAnsweredAsDocumented(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, func(c *api.Config) {
		// The sweep sends hundreds of frames: the budget and the abuse
		// limit are not what it looks at (their own tests are).
		c.Limits.RatePerSecond, c.Limits.RateBurst = 1<<20, 1<<20
		c.Abuse.Rejects = 1 << 20
	})
	chat := e.mustGroup(t, "alice", "bob")
	sent := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "odd-0", "body": "first"})
	mid := sent["id"].(string)
	alice, _ := e.dial(t, "alice", "d1")
	bob, _ := e.dial(t, "bob", "d1")

	bases := []map[string]any{
		{"type": "send", "chat": chat, "cid": "c", "body": "b", "meta": map[string]any{"k": "v"}},
		{"type": "ack", "ids": []string{mid}},
		{"type": "read", "chat": chat, "upto": mid},
		{"type": "ping"},
		{"type": "edit", "chat": chat, "cid": "c", "target": mid, "body": "b"},
		{"type": "delete", "chat": chat, "cid": "c", "target": mid},
		{"type": "react", "chat": chat, "cid": "c", "target": mid, "emoji": "x", "on": true},
		{"type": "typing", "chat": chat},
		// A string token that does not verify closes with 4401, as the
		// protocol says ("Token lifetime on an open WebSocket"): only the
		// values that are not strings are swept for auth.
		{"type": "auth", "token": 1},
	}
	// A reader takes every answer while the sweep writes: a client that
	// does not read is closed with 4001 once its outbound queue is full.
	type answer struct {
		m   map[string]any
		err error
	}
	answers := make(chan answer, 4096)
	go func() {
		for {
			_ = alice.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, b, err := alice.conn.ReadMessage()
			if err != nil {
				answers <- answer{err: err}
				return
			}
			var m map[string]any
			if uerr := json.Unmarshal(b, &m); uerr != nil {
				err = fmt.Errorf("frame %q: %w", b, uerr)
			}
			answers <- answer{m: m, err: err}
		}
	}()
	answered := map[string]int{}
	// await reads answers, checking each, until one satisfies done.
	await := func(what string, done func(m map[string]any) bool) {
		t.Helper()
		for {
			a := <-answers
			if a.err != nil {
				t.Fatalf("waiting for %s: %v (answers so far %v)", what, a.err, answered)
			}
			typ, _ := a.m["type"].(string)
			answered[typ]++
			if typ == "rejected" {
				if code, _ := a.m["code"].(string); !clientCodes[code] {
					t.Errorf("rejected %v: %q is not a code for a client's bad frame", a.m, code)
				}
			}
			if done(a.m) {
				return
			}
		}
	}
	frames := 0
	for _, base := range bases {
		for field := range base {
			for _, v := range oddValues {
				if base["type"] == "auth" && strings.HasPrefix(v, `"`) {
					continue
				}
				f := map[string]json.RawMessage{}
				for k, bv := range base {
					raw, err := json.Marshal(bv)
					if err != nil {
						t.Fatal(err)
					}
					f[k] = raw
				}
				f[field] = json.RawMessage(v)
				if _, ok := f["cid"]; ok && field != "cid" {
					f["cid"] = json.RawMessage(`"odd-` + strconv.Itoa(frames) + `"`)
				}
				raw, err := json.Marshal(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := alice.conn.WriteMessage(websocket.TextMessage, raw); err != nil {
					var last []map[string]any
					for a := range answers {
						if a.err != nil {
							t.Fatalf("write %s: %v; the connection ended with %v after %v", clip(raw), err, a.err, last)
						}
						last = append(last[max(0, len(last)-4):], a.m)
					}
				}
				frames++
				// Like a client that reads its answers before it sends
				// more: a ping every 16 frames, and its pong awaited.
				if frames%16 == 0 {
					alice.sendJSON(map[string]any{"type": "ping"})
					await("a pong", func(m map[string]any) bool { return m["type"] == "pong" })
				}
			}
		}
	}
	// A valid send closes the sweep: every answer is checked, and the
	// connection must still be open.
	alice.sendJSON(sendFrame(chat, "odd-last", "still here"))
	await("the last send's accepted", func(m map[string]any) bool { return m["type"] == "accepted" && m["cid"] == "odd-last" })
	alice.conn.Close() // ends the reader
	t.Logf("%d odd frames; answers: %v", frames, answered)
	if answered["rejected"] < frames/2 {
		t.Errorf("%d rejected of %d odd frames; the sweep did not reach the frame checks", answered["rejected"], frames)
	}
	for {
		m := bob.next()
		if m["type"] == "msg" && m["cid"] == "odd-last" {
			break
		}
	}
}
