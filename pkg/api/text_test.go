package api_test

import (
	"strings"
	"testing"
)

// Text PostgreSQL cannot store (a NUL, bytes that are not
// UTF-8) is refused at the edge, 400 invalid on REST and rejected invalid on
// the WebSocket, with an error naming the field; it never reaches a batch
// (where it failed every other sender's send) and never answers 500, 503
// or overloaded.
func TestUnstorableTextIsRefusedAtTheEdge(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	base := "/api/chats/" + chat + "/messages"
	mid := e.mustCall(t, 201, "alice", "POST", base, map[string]any{"cid": "m0", "body": "hello"})["id"].(string)
	one := base + "/" + mid

	rest := []struct {
		name, method, path, body, field string
	}{
		{"NUL in a body", "POST", base, `{"cid":"n1","body":"a\u0000b"}`, "body"},
		{"body not UTF-8", "POST", base, "{\"cid\":\"n2\",\"body\":\"a\xffb\"}", "body"},
		{"NUL in meta", "POST", base, `{"cid":"n3","body":"b","meta":{"k":"a\u0000b"}}`, "meta"},
		{"lone surrogate in meta", "POST", base, `{"cid":"n4","body":"b","meta":{"k":"\ud800"}}`, "meta"},
		{"meta not UTF-8", "POST", base, "{\"cid\":\"n5\",\"body\":\"b\",\"meta\":{\"k\":\"a\xffb\"}}", "meta"},
		{"NUL in an edit", "PATCH", one, `{"cid":"n6","body":"a\u0000b"}`, "body"},
		{"NUL in an emoji", "POST", one + "/reactions", `{"cid":"n7","emoji":"\u0000","on":true}`, "emoji"},
		{"NUL in a group title", "POST", "/api/chats", `{"members":["bob"],"title":"a\u0000b"}`, "title"},
		{"group title not UTF-8", "POST", "/api/chats", "{\"members\":[\"bob\"],\"title\":\"a\xffb\"}", "title"},
	}
	for _, tt := range rest {
		t.Run("REST "+tt.name, func(t *testing.T) {
			status, out, _ := e.call(t, "alice", tt.method, tt.path, tt.body)
			msg, _ := out["error"].(string)
			if status != 400 || out["code"] != "invalid" || !strings.Contains(msg, tt.field) {
				t.Fatalf("got %d %v, want 400 invalid with an error naming %s", status, out, tt.field)
			}
			if strings.Contains(tt.name, "UTF-8") && !strings.Contains(msg, "UTF-8") {
				t.Fatalf("got %q, want an error that says the text is not UTF-8", msg)
			}
		})
	}

	c, _ := e.dial(t, "alice", "")
	ws := []struct {
		name  string
		frame map[string]any
		field string
	}{
		{"NUL in a body", sendFrame(chat, "w1", "a\x00b"), "body"},
		{"NUL in meta", map[string]any{"type": "send", "chat": chat, "cid": "w2", "body": "b", "meta": map[string]any{"k": "\x00"}}, "meta"},
		{"NUL in an edit", editFrame(chat, "w3", mid, "a\x00b"), "body"},
		{"NUL in an emoji", reactFrame(chat, "w4", mid, "\x00", true), "emoji"},
	}
	for _, tt := range ws {
		c.sendJSON(tt.frame)
		r := c.nextOf("rejected")
		msg, _ := r["error"].(string)
		if r["code"] != "invalid" || r["cid"] != tt.frame["cid"] || !strings.Contains(msg, tt.field) {
			t.Fatalf("WebSocket %s: got %v, want rejected invalid for cid %v with an error naming %s", tt.name, r, tt.frame["cid"], tt.field)
		}
	}

	// Nothing of it was stored: the chat holds only its first message.
	if hist := e.history(t, "alice", chat); len(hist) != 1 {
		t.Fatalf("history: got %d messages, want 1", len(hist))
	}
	c.sendJSON(sendFrame(chat, "ok", "fine"))
	if acc := c.nextOf("accepted"); acc["seq"] != 2.0 {
		t.Fatalf("after the refusals: got %v, want seq 2", acc)
	}
}
