package api_test

import (
	"slices"
	"strconv"
	"testing"
)

// chatOf returns the chat with id from a GET /api/chats answer.
func chatOf(t *testing.T, list map[string]any, id string) map[string]any {
	t.Helper()
	chats, _ := list["chats"].([]any)
	for _, c := range chats {
		if m, _ := c.(map[string]any); m["id"] == id {
			return m
		}
	}
	t.Fatalf("chat %s not in %v", id, list)
	return nil
}

// wantCounts checks a listed chat's last_seq, read_seq and unread.
func wantCounts(t *testing.T, who string, c map[string]any, lastSeq, readSeq, unread float64) {
	t.Helper()
	if c["last_seq"] != lastSeq || c["read_seq"] != readSeq || c["unread"] != unread {
		t.Errorf("%s: got last_seq %v read_seq %v unread %v, want %v %v %v",
			who, c["last_seq"], c["read_seq"], c["unread"], lastSeq, readSeq, unread)
	}
}

// GET /api/chats gives every chat the caller's read_seq and unread count
// beside last_seq, with exactly the documented keys.
func TestRESTListChatsUnread(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	var ids []string
	for i := range 3 {
		out := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages",
			map[string]any{"cid": "k" + strconv.Itoa(i), "body": "hi"})
		ids = append(ids, out["id"].(string))
	}

	c := chatOf(t, e.mustCall(t, 200, "bob", "GET", "/api/chats", nil), chat)
	var keys []string
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"created_at", "id", "kind", "last_seq", "members", "members_read", "read_seq", "title", "unread"}; !slices.Equal(keys, want) {
		t.Errorf("chat keys %v, want %v", keys, want)
	}
	wantCounts(t, "bob, never read", c, 3, 0, 3)
	wantCounts(t, "alice, her own messages", chatOf(t, e.mustCall(t, 200, "alice", "GET", "/api/chats", nil), chat), 3, 0, 0)

	// A read is stored asynchronously; alice's receipt says it was.
	alice, _ := e.dial(t, "alice", "")
	bob, _ := e.dial(t, "bob", "")
	bob.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": ids[1]})
	alice.nextOf("receipt")
	wantCounts(t, "bob, read 2", chatOf(t, e.mustCall(t, 200, "bob", "GET", "/api/chats", nil), chat), 3, 2, 1)

	bob.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": ids[0]})
	alice.nextOf("receipt")
	wantCounts(t, "bob, older read", chatOf(t, e.mustCall(t, 200, "bob", "GET", "/api/chats", nil), chat), 3, 2, 1)

	if list := e.mustCall(t, 200, "dave", "GET", "/api/chats", nil); list["chats"] == nil {
		t.Errorf("dave's chats: got %v, want an empty list", list)
	}
}
