package api_test

import (
	"strconv"
	"testing"
)

// Typing reaches the chat's other members, not the typist's other devices;
// a second frame within 3 s is dropped silently; a non-member is refused
// forbidden and an unknown chat not_found, both with cid "".
func TestWSTyping(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	alicePhone, _ := e.dial(t, "alice", "phone")
	aliceLaptop, _ := e.dial(t, "alice", "laptop")
	bob, _ := e.dial(t, "bob", "")
	mallory, _ := e.dial(t, "mallory", "")

	alicePhone.sendJSON(map[string]any{"type": "typing", "chat": chat})
	alicePhone.sendJSON(map[string]any{"type": "typing", "chat": chat}) // dropped
	got := bob.nextOf("typing")
	if got["chat"] != chat || got["user"] != "alice" {
		t.Errorf("bob got %v, want typing of alice in %s", got, chat)
	}
	// Neither the typist's devices nor bob get anything more: the next
	// frame each reads is the answer to its own ping.
	for who, c := range map[string]*wsc{"alice's phone": alicePhone, "alice's laptop": aliceLaptop, "bob": bob} {
		c.sendJSON(map[string]any{"type": "ping"})
		if f := c.next(); f["type"] != "pong" {
			t.Errorf("%s got %v, want only the pong", who, f)
		}
	}

	tests := []struct {
		name string
		chat string
		code string
	}{
		{"not a member", chat, "forbidden"},
		{"unknown chat", "no-such-chat", "not_found"},
	}
	for _, tt := range tests {
		mallory.sendJSON(map[string]any{"type": "typing", "chat": tt.chat})
		r := mallory.nextOf("rejected")
		if r["code"] != tt.code || r["cid"] != "" {
			t.Errorf("%s: got %v, want rejected %s with cid \"\"", tt.name, r, tt.code)
		}
	}
}

// Without a presence component every user is offline; the answer has one
// entry per user asked, and more than 100 users is a 400.
func TestRESTPresenceShape(t *testing.T) {
	e := mustEnv(t)
	status, body, _ := e.call(t, "alice", "GET", "/api/presence?users=bob,carol", nil)
	if status != 200 {
		t.Fatalf("got status %d, want 200", status)
	}
	p, _ := body["presence"].(map[string]any)
	for _, u := range []string{"bob", "carol"} {
		got, _ := p[u].(map[string]any)
		if len(got) != 1 || got["online"] != false {
			t.Errorf("%s: got %v, want {online:false}", u, got)
		}
	}
	users := "u0"
	for i := 1; i <= 100; i++ {
		users += ",u" + strconv.Itoa(i)
	}
	if status, _, _ := e.call(t, "alice", "GET", "/api/presence?users="+users, nil); status != 400 {
		t.Errorf("101 users: got status %d, want 400", status)
	}
	if status, _, _ := e.call(t, "alice", "GET", "/api/presence", nil); status != 400 {
		t.Errorf("no users: got status %d, want 400", status)
	}
}
