package api_test

import (
	"strings"
	"testing"
)

// A body is checked once, in ingest, against one limit, whatever the path:
// the WebSocket and REST answers of a send and of an edit carry the same
// code and the same text, the ones clients got when api checked bodies
// itself.
func TestBodyRefusedAlikeOnWSAndREST(t *testing.T) {
	e := mustEnv(t, withBodyLimit(t, 10))
	chat := e.mustGroup(t, "alice", "bob")
	c, _ := e.dial(t, "alice", "")
	c.sendJSON(sendFrame(chat, "m1", "fine"))
	target := c.nextOf("accepted")["id"].(string)
	tests := []struct {
		name, body, code, text string
	}{
		{"over the limit", strings.Repeat("x", 11), "too_large", "body is 11 bytes, the limit is 10: too large"},
		{"NUL", "a\x00", "invalid", "body holds a NUL character (U+0000) at byte 1, which cannot be stored: remove it: invalid"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []string{"send", "edit"} {
				cid := kind + "-" + string(rune('a'+i))
				frame := sendFrame(chat, cid, tt.body)
				method, path, body := "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": cid + "r", "body": tt.body}
				if kind == "edit" {
					frame = map[string]any{"type": "edit", "chat": chat, "cid": cid, "target": target, "body": tt.body}
					method, path = "PATCH", "/api/chats/"+chat+"/messages/"+target
				}
				c.sendJSON(frame)
				if f := c.nextOf("rejected"); f["cid"] != cid || f["code"] != tt.code || f["error"] != tt.text {
					t.Errorf("WebSocket %s: got %v, want code %q, error %q", kind, f, tt.code, tt.text)
				}
				status, out, _ := e.call(t, "alice", method, path, body)
				if status != 400 || out["code"] != tt.code || out["error"] != tt.text {
					t.Errorf("REST %s: got %d %v, want 400 code %q, error %q", kind, status, out, tt.code, tt.text)
				}
			}
		})
	}
}
