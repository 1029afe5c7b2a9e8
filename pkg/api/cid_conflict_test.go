package api_test

import "testing"

// A cid reused for another chat is not a resend. REST
// answers 409 cid_conflict, the WebSocket `rejected invalid`, and nothing is
// stored in the second chat (before, REST answered 200 with chat A's message
// and B's member never got anything).
func TestCIDReusedInAnotherChat(t *testing.T) {
	e := mustEnv(t)
	a := e.mustGroup(t, "alice", "bob")
	b := e.mustGroup(t, "alice", "carol")

	first := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+a+"/messages", map[string]any{"cid": "x1", "body": "to a"})
	e.wantError(t, 409, "cid_conflict", "alice", "POST", "/api/chats/"+b+"/messages", map[string]any{"cid": "x1", "body": "to b"})
	// The same chat is still a resend.
	if again := e.mustCall(t, 200, "alice", "POST", "/api/chats/"+a+"/messages", map[string]any{"cid": "x1", "body": "to a"}); again["id"] != first["id"] {
		t.Errorf("resend: got %v, want the original %v", again, first)
	}

	c, _ := e.dial(t, "alice", "")
	c.sendJSON(sendFrame(b, "x1", "to b")) // a REST cid reused on the WebSocket
	if r := c.nextOf("rejected"); r["code"] != "invalid" || r["cid"] != "x1" || r["error"] == "" {
		t.Errorf("WS reuse of a REST cid: got %v, want rejected invalid with cid x1", r)
	}
	c.sendJSON(sendFrame(a, "w1", "to a"))
	c.nextOf("accepted")
	c.sendJSON(sendFrame(b, "w1", "to b"))
	if r := c.nextOf("rejected"); r["code"] != "invalid" || r["cid"] != "w1" {
		t.Errorf("WS reuse of a WS cid: got %v, want rejected invalid with cid w1", r)
	}
	e.wantError(t, 409, "cid_conflict", "alice", "POST", "/api/chats/"+b+"/messages", map[string]any{"cid": "w1", "body": "to b"})

	if msgs := e.history(t, "carol", b); len(msgs) != 0 {
		t.Errorf("chat b holds %d messages, want none", len(msgs))
	}
	if msgs := e.history(t, "bob", a); len(msgs) != 2 {
		t.Errorf("chat a holds %d messages, want 2", len(msgs))
	}
}
