package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
)

// adminEnv is an env whose admin is the service "backend".
func adminEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := mustEnv(t, func(c *api.Config) { c.AdminUsers = []string{"backend"} })
	return e, mustServiceToken(t, "backend", "")
}

// asAdmin is mustCall with the admin's token.
func (e *env) asAdmin(t *testing.T, tok string, want int, method, path string, body any) map[string]any {
	t.Helper()
	got, out, _ := e.callToken(t, tok, method, path, body)
	if got != want {
		t.Fatalf("%s %s as the admin: status %d (%v), want %d", method, path, got, out, want)
	}
	return out
}

func membersOf(chat map[string]any) string {
	var out []string
	for _, m := range chat["members"].([]any) {
		out = append(out, m.(string))
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// Only --admin-users reach the admin chat calls, whether people or
// services: anyone else is 403 before the body is looked at.
func TestAdminChatsForbiddenToOthers(t *testing.T) {
	e, admin := adminEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	calls := []struct{ method, path string }{
		{"POST", "/api/admin/chats"},
		{"POST", "/api/admin/chats/direct"},
		{"POST", "/api/admin/chats/" + chat + "/members"},
		{"DELETE", "/api/admin/chats/" + chat + "/members/bob"},
		{"POST", "/api/admin/chats/" + chat + "/messages"},
	}
	other := mustServiceToken(t, "otherbot", "")
	for _, c := range calls {
		e.wantError(t, 403, "forbidden", "alice", c.method, c.path, map[string]any{})
		if got, out, _ := e.callToken(t, other, c.method, c.path, map[string]any{}); got != 403 || out["code"] != "forbidden" {
			t.Errorf("%s %s as a service not in --admin-users: %d %v, want 403 forbidden", c.method, c.path, got, out)
		}
	}
	// The same token as a person is an admin too: --admin-users names ids.
	e.asAdmin(t, admin, 400, "POST", "/api/admin/chats", map[string]any{})
	if got, _, _ := e.call(t, "backend", "POST", "/api/admin/chats", map[string]any{}); got != 400 {
		t.Errorf("a person's token for an admin id: %d, want 400 (authorized, bad body)", got)
	}
}

// The admin creates chats for users (the caller is not a member), changes
// their members, with the rules of the members' own calls.
func TestAdminCreatesChatsAndChangesMembers(t *testing.T) {
	e, admin := adminEnv(t)
	group := e.asAdmin(t, admin, 201, "POST", "/api/admin/chats", map[string]any{"members": []string{"bob", "alice", "bob"}, "title": "Support"})
	if group["kind"] != "group" || group["title"] != "Support" || membersOf(group) != "[alice bob]" {
		t.Fatalf("created %v, want the group Support of alice and bob only", group)
	}
	id := group["id"].(string)
	if list := e.mustCall(t, 200, "alice", "GET", "/api/chats", nil)["chats"].([]any); len(list) != 1 || list[0].(map[string]any)["id"] != id {
		t.Fatalf("alice's chats %v, want the new group", list)
	}
	e.wantError(t, 403, "forbidden", "backend", "GET", "/api/chats/"+id+"/messages", nil)

	e.asAdmin(t, admin, 400, "POST", "/api/admin/chats", map[string]any{"members": []string{}})
	e.asAdmin(t, admin, 400, "POST", "/api/admin/chats", map[string]any{"members": []string{"a b"}})

	direct := e.asAdmin(t, admin, 201, "POST", "/api/admin/chats/direct", map[string]any{"users": []string{"alice", "carol"}})
	if direct["kind"] != "direct" || membersOf(direct) != "[alice carol]" {
		t.Fatalf("direct %v, want alice and carol", direct)
	}
	again := e.asAdmin(t, admin, 200, "POST", "/api/admin/chats/direct", map[string]any{"users": []string{"carol", "alice"}})
	own := e.mustCall(t, 200, "carol", "POST", "/api/chats/direct", map[string]any{"user": "alice"})
	if again["id"] != direct["id"] || own["id"] != direct["id"] {
		t.Fatalf("direct ids %v, %v, %v: want one chat per pair", direct["id"], again["id"], own["id"])
	}
	e.asAdmin(t, admin, 400, "POST", "/api/admin/chats/direct", map[string]any{"users": []string{"alice"}})
	e.asAdmin(t, admin, 400, "POST", "/api/admin/chats/direct", map[string]any{"users": []string{"alice", "alice"}})

	added := e.asAdmin(t, admin, 200, "POST", "/api/admin/chats/"+id+"/members", map[string]any{"user": "dave"})
	if membersOf(added) != "[alice bob dave]" {
		t.Fatalf("after adding dave: %v", added)
	}
	e.mustCall(t, 200, "dave", "GET", "/api/chats/"+id+"/messages", nil)
	e.asAdmin(t, admin, 409, "POST", "/api/admin/chats/"+direct["id"].(string)+"/members", map[string]any{"user": "dave"})
	e.asAdmin(t, admin, 404, "POST", "/api/admin/chats/nochat/members", map[string]any{"user": "dave"})
	e.asAdmin(t, admin, 400, "POST", "/api/admin/chats/"+id+"/members", map[string]any{"user": ""})

	e.asAdmin(t, admin, 204, "DELETE", "/api/admin/chats/"+id+"/members/bob", nil)
	e.wantError(t, 403, "forbidden", "bob", "GET", "/api/chats/"+id+"/messages", nil)
	e.asAdmin(t, admin, 204, "DELETE", "/api/admin/chats/"+id+"/members/bob", nil) // not a member: no-op
	e.asAdmin(t, admin, 409, "DELETE", "/api/admin/chats/"+direct["id"].(string)+"/members/alice", nil)
	e.asAdmin(t, admin, 404, "DELETE", "/api/admin/chats/nochat/members/alice", nil)
}

// A system message is the caller's message in a chat it is not a member
// of: it goes through ingest like any send, so it takes the chat's next
// seq, reaches the members live and stays in history; a resend of its cid
// is answered with the original.
func TestAdminSystemMessageLiveAndInHistory(t *testing.T) {
	e, admin := adminEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	alice, _ := e.dial(t, "alice", "phone")
	alice.sendJSON(sendFrame(chat, "a1", "hi"))
	alice.nextOf("accepted")

	path := "/api/admin/chats/" + chat + "/messages"
	body := map[string]any{"cid": "welcome-1", "body": "bob joined", "meta": map[string]any{"system": "member_added", "user": "bob"}}
	sys := e.asAdmin(t, admin, 201, "POST", path, body)
	if sys["seq"] != 2.0 || sys["cid"] != "welcome-1" {
		t.Fatalf("system message answered %v, want seq 2", sys)
	}
	live := alice.nextOf("msg")
	if live["id"] != sys["id"] || live["from"] != "backend" || live["seq"] != 2.0 || live["body"] != "bob joined" ||
		live["meta"].(map[string]any)["system"] != "member_added" {
		t.Fatalf("alice got %v live, want the system message %v from backend", live, sys["id"])
	}
	if again := e.asAdmin(t, admin, 200, "POST", path, body); again["id"] != sys["id"] || again["seq"] != 2.0 {
		t.Fatalf("resend answered %v, want the original %v", again, sys)
	}
	alice.sendJSON(sendFrame(chat, "a2", "thanks"))
	if a := alice.nextOf("accepted"); a["seq"] != 3.0 {
		t.Fatalf("the next send: %v, want seq 3 (gapless after the system message)", a)
	}
	msgs := e.history(t, "bob", chat)
	if len(msgs) != 3 || msgs[1].ID != sys["id"] || msgs[1].From != "backend" || msgs[1].Seq != 2 {
		t.Fatalf("bob's history %+v, want the system message at seq 2", msgs)
	}
	if unread := e.mustCall(t, 200, "bob", "GET", "/api/chats", nil)["chats"].([]any)[0].(map[string]any)["unread"]; unread != 3.0 {
		t.Errorf("bob's unread %v, want 3 (the system message counts)", unread)
	}

	e.asAdmin(t, admin, 404, "POST", "/api/admin/chats/nochat/messages", map[string]any{"cid": "other", "body": "x"})
	e.asAdmin(t, admin, 400, "POST", path, map[string]any{"cid": "x", "body": ""})
	e.asAdmin(t, admin, 400, "POST", path, map[string]any{"body": "no cid"})
	if got, out, _ := e.callToken(t, admin, "POST", path, map[string]any{"cid": "welcome-1", "body": "x"}); got != http.StatusOK || out["id"] != sys["id"] {
		t.Errorf("same cid, other body: %d %v, want 200 with the original", got, out)
	}
	// The admin's own cids are its own: a cid it used in this chat, sent
	// to another chat, is a conflict as for any sender.
	other := e.mustGroup(t, "alice", "carol")
	if got, out, _ := e.callToken(t, admin, "POST", "/api/admin/chats/"+other+"/messages", body); got != http.StatusConflict || out["code"] != "cid_conflict" {
		t.Errorf("cid reused in another chat: %d %v, want 409 cid_conflict", got, out)
	}
}

// An admin user that is not a user id would match no token: the server
// refuses to start with it, naming it and the flag.
func TestAdminUsersMustBeUserIDs(t *testing.T) {
	_, err := api.New(api.Config{AdminUsers: []string{"ops", "b c"}})
	if err == nil || !strings.Contains(err.Error(), `"b c"`) || !strings.Contains(err.Error(), "--admin-users") {
		t.Fatalf("api.New with admin user %q: %v, want a refusal naming it and --admin-users", "b c", err)
	}
}
