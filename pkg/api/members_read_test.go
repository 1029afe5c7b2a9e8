package api_test

import (
	"maps"
	"strconv"
	"testing"
)

// membersRead returns a listed chat's members_read as user → seq.
func membersRead(t *testing.T, c map[string]any) map[string]float64 {
	t.Helper()
	raw, ok := c["members_read"].(map[string]any)
	if !ok {
		t.Fatalf("members_read: got %#v, want an object", c["members_read"])
	}
	out := map[string]float64{}
	for u, v := range raw {
		out[u], _ = v.(float64)
	}
	return out
}

// GET /api/chats gives every chat its members' read positions, so a client
// that was not connected when a receipt went out (receipts are live only)
// still shows who read what: members who never read are absent, and a
// former member's position is not shown.
func TestRESTListChatsMembersRead(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob", "carol")
	var ids []string
	for i := range 3 {
		out := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages",
			map[string]any{"cid": "mr" + strconv.Itoa(i), "body": "hi"})
		ids = append(ids, out["id"].(string))
	}
	list := func(who string) map[string]float64 {
		return membersRead(t, chatOf(t, e.mustCall(t, 200, who, "GET", "/api/chats", nil), chat))
	}
	if got := list("alice"); len(got) != 0 {
		t.Errorf("nobody read yet: members_read %v, want {}", got)
	}

	alice, _ := e.dial(t, "alice", "")
	bob, _ := e.dial(t, "bob", "")
	carol, _ := e.dial(t, "carol", "")
	bob.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": ids[1]})
	alice.nextOf("receipt") // stored: the receipt goes out after the commit
	carol.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": ids[0]})
	alice.nextOf("receipt")
	want := map[string]float64{"bob": 2, "carol": 1}
	for _, who := range []string{"alice", "bob", "carol"} {
		if got := list(who); !maps.Equal(got, want) {
			t.Errorf("%s's list: members_read %v, want %v", who, got, want)
		}
	}

	// A former member's position is gone from the list of those who stay.
	e.mustCall(t, 204, "alice", "DELETE", "/api/chats/"+chat+"/members/carol", nil)
	if got, want := list("alice"), map[string]float64{"bob": 2}; !maps.Equal(got, want) {
		t.Errorf("after carol left: members_read %v, want %v", got, want)
	}
}
