package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api/apitest"
)

func editFrame(chat, cid, target, body string) map[string]any {
	return map[string]any{"type": "edit", "chat": chat, "cid": cid, "target": target, "body": body}
}

func reactFrame(chat, cid, target, emoji string, on bool) map[string]any {
	return map[string]any{"type": "react", "chat": chat, "cid": cid, "target": target, "emoji": emoji, "on": on}
}

// wantRejected reads the next frame and checks it is a rejection with code.
func (c *wsc) wantRejected(cid, code string) {
	c.t.Helper()
	r := c.nextOf("rejected")
	if r["cid"] != cid || r["code"] != code {
		c.t.Fatalf("got %v, want rejected %s for cid %s", r, code, cid)
	}
}

// Events over the WebSocket are answered like sends, delivered live to the
// other members as msg frames with their fields, and acked by id.
func TestWSEventsAnsweredDeliveredAndAcked(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	other := e.mustGroup(t, "alice", "bob")
	alice, _ := e.dial(t, "alice", "phone")
	bob, _ := e.dial(t, "bob", "phone")

	send := sendFrame(chat, "m1", "hello")
	send["meta"] = json.RawMessage(`{"reply_to": null, "n": 1e3}`)
	alice.sendJSON(send)
	acc := alice.nextOf("accepted")
	mid := acc["id"].(string)
	got := bob.nextOf("msg")
	if meta, _ := json.Marshal(got["meta"]); got["id"] != mid || string(meta) != `{"n":1000,"reply_to":null}` {
		t.Fatalf("bob got %v", got)
	}
	if _, ok := got["kind"]; ok {
		t.Fatalf("a message carries no kind: %v", got)
	}
	bob.sendJSON(map[string]any{"type": "ack", "ids": []string{mid}})

	alice.sendJSON(editFrame(chat, "e1", mid, "hello, edited"))
	edit := alice.nextOf("accepted")
	if edit["seq"].(float64) != 2 {
		t.Fatalf("edit accepted: %v, want seq 2", edit)
	}
	got = bob.nextOf("msg")
	if got["kind"] != "edit" || got["target"] != mid || got["body"] != "hello, edited" || got["id"] != edit["id"] {
		t.Fatalf("bob got %v, want the edit", got)
	}
	bob.sendJSON(map[string]any{"type": "ack", "ids": []string{got["id"].(string)}})

	bob.sendJSON(reactFrame(chat, "r1", mid, "👍", true))
	react := bob.nextOf("accepted")
	got = alice.nextOf("msg")
	if got["kind"] != "reaction" || got["emoji"] != "👍" || got["on"] != true || got["id"] != react["id"] {
		t.Fatalf("alice got %v, want the reaction", got)
	}

	bob.sendJSON(editFrame(chat, "x1", mid, "not mine"))
	bob.wantRejected("x1", "forbidden")
	bob.sendJSON(map[string]any{"type": "delete", "chat": other, "cid": "x2", "target": mid})
	bob.wantRejected("x2", "not_found")
	bob.sendJSON(reactFrame(chat, "x3", mid, strings.Repeat("x", 33), true))
	bob.wantRejected("x3", "too_large")
	bob.sendJSON(reactFrame(chat, "x4", mid, "", true))
	bob.wantRejected("x4", "invalid")
	big := sendFrame(chat, "x5", "b")
	big["meta"] = map[string]string{"a": strings.Repeat("x", 2048)}
	bob.sendJSON(big)
	bob.wantRejected("x5", "too_large")

	// A resend is the original whatever its other fields; another kind with
	// the same cid is a conflict.
	alice.sendJSON(editFrame(chat, "e1", mid, "something else"))
	if again := alice.nextOf("accepted"); again["id"] != edit["id"] || again["seq"] != edit["seq"] {
		t.Fatalf("resend: got %v, want %v", again, edit)
	}
	alice.sendJSON(map[string]any{"type": "delete", "chat": chat, "cid": "e1", "target": mid})
	alice.wantRejected("e1", "invalid")

	alice.sendJSON(map[string]any{"type": "delete", "chat": chat, "cid": "d1", "target": mid})
	alice.nextOf("accepted")
	alice.sendJSON(editFrame(chat, "e2", mid, "too late"))
	alice.wantRejected("e2", "invalid")
	if got := bob.nextOf("msg"); got["kind"] != "delete" || got["target"] != mid {
		t.Fatalf("bob got %v, want the delete", got)
	}
	if n := len(e.history(t, "bob", chat)); n != 4 {
		t.Fatalf("history: got %d events, want 4 (refused events take no seq)", n)
	}
}

// The REST calls of the events, with the protocol's statuses, and history
// and GET of one message showing the current state.
func TestRESTEvents(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	other := e.mustGroup(t, "alice", "bob")
	base := "/api/chats/" + chat + "/messages"
	meta := `{"reply_to":"x","n":1e3,"f":1.50,"s":"<&>"}`
	sent := e.mustCall(t, 201, "alice", "POST", base, `{"cid":"m1","body":"hello","meta":`+meta+`}`)
	mid := sent["id"].(string)
	one := base + "/" + mid

	e.wantError(t, 400, "too_large", "alice", "POST", base, `{"cid":"m2","body":"b","meta":{"a":"`+strings.Repeat("x", 2048)+`"}}`)
	e.wantError(t, 400, "invalid", "alice", "POST", base, `{"cid":"m3","body":"b","meta":[1]}`)

	edit := e.mustCall(t, 201, "alice", "PATCH", one, map[string]any{"cid": "e1", "body": "edited"})
	if again := e.mustCall(t, 200, "alice", "PATCH", one, map[string]any{"cid": "e1", "body": "other"}); again["id"] != edit["id"] {
		t.Fatalf("resend: got %v, want %v", again, edit)
	}
	e.wantError(t, 409, "cid_conflict", "alice", "DELETE", one+"?cid=e1", nil)
	e.wantError(t, 403, "forbidden", "bob", "PATCH", one, map[string]any{"cid": "b1", "body": "x"})
	e.wantError(t, 403, "forbidden", "bob", "DELETE", one+"?cid=b2", nil)
	e.wantError(t, 403, "forbidden", "eve", "GET", one, nil)
	e.wantError(t, 404, "not_found", "alice", "PATCH", "/api/chats/"+other+"/messages/"+mid, map[string]any{"cid": "b3", "body": "x"})
	e.wantError(t, 404, "not_found", "alice", "GET", "/api/chats/"+other+"/messages/"+mid, nil)
	e.wantError(t, 400, "invalid", "alice", "PATCH", base+"/"+edit["id"].(string), map[string]any{"cid": "b4", "body": "x"})
	e.wantError(t, 400, "invalid", "bob", "POST", one+"/reactions", map[string]any{"cid": "b5", "emoji": "👍"})
	e.wantError(t, 400, "invalid", "bob", "POST", one+"/reactions", map[string]any{"cid": "b6", "emoji": "", "on": true})
	e.wantError(t, 400, "too_large", "bob", "POST", one+"/reactions", map[string]any{"cid": "b7", "emoji": strings.Repeat("x", 33), "on": true})
	e.mustCall(t, 201, "bob", "POST", one+"/reactions", map[string]any{"cid": "r1", "emoji": "👍", "on": true})
	e.mustCall(t, 201, "alice", "POST", one+"/reactions", map[string]any{"cid": "r2", "emoji": "👍", "on": true})
	e.mustCall(t, 201, "alice", "POST", one+"/reactions", map[string]any{"cid": "r3", "emoji": "👍", "on": false})

	got := e.mustCall(t, 200, "bob", "GET", one, nil)
	rx, _ := json.Marshal(got["reactions"])
	if got["body"] != "edited" || got["edited_at"] == nil || string(rx) != `{"👍":["bob"]}` {
		t.Fatalf("GET message: %v", got)
	}
	var raw struct{ Meta json.RawMessage }
	if err := json.Unmarshal(e.rawGet(t, "bob", one), &raw); err != nil || !sameJSONText(t, raw.Meta, []byte(meta)) {
		gotMeta := raw.Meta
		t.Fatalf("meta: got %s, want %s", gotMeta, meta)
	}
	hist := e.history(t, "bob", chat)
	if len(hist) != 5 || hist[0].Body != "edited" || hist[1].Body != "edited" || hist[1].Kind != "edit" {
		t.Fatalf("history: %+v", hist)
	}

	e.mustCall(t, 201, "alice", "DELETE", one+"?cid=d1", nil)
	e.wantError(t, 400, "invalid", "alice", "DELETE", one+"?cid=d2", nil)
	got = e.mustCall(t, 200, "bob", "GET", one, nil)
	if got["deleted"] != true || got["body"] != "" || got["meta"] != nil || got["reactions"] != nil {
		t.Fatalf("deleted message: %v", got)
	}
	var texts int
	if err := e.store.Pool().QueryRow(context.Background(),
		`select count(*) from history where chat_id = $1 and (body like '%edited%' or body = 'hello' or meta is not null)`, chat).Scan(&texts); err != nil || texts != 0 {
		t.Fatalf("rows still holding text or meta: %d (%v)", texts, err)
	}
}

// rawGet returns the body of a GET as user.
func (e *env) rawGet(t *testing.T, user, path string) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", e.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apitest.Token(t, testSecret, user, ""))
	resp, body := e.do(t, req, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

// sameJSONText compares two JSON texts as values with number texts kept
// (json.Number), so 1e3 and 1000 differ.
func sameJSONText(t *testing.T, a, b []byte) bool {
	t.Helper()
	dec := func(raw []byte) any {
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	return dec(a) == dec(b)
}

// Unread counts only messages, not events, and not deleted messages.
func TestUnreadCountsUndeletedMessagesOnly(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	base := "/api/chats/" + chat + "/messages"
	m1 := e.mustCall(t, 201, "alice", "POST", base, map[string]any{"cid": "m1", "body": "one"})["id"].(string)
	e.mustCall(t, 201, "alice", "POST", base, map[string]any{"cid": "m2", "body": "two"})
	e.mustCall(t, 201, "alice", "PATCH", base+"/"+m1, map[string]any{"cid": "e1", "body": "one!"})
	e.mustCall(t, 201, "alice", "POST", base+"/"+m1+"/reactions", map[string]any{"cid": "r1", "emoji": "x", "on": true})
	unread := func() any {
		list := e.mustCall(t, 200, "bob", "GET", "/api/chats", nil)
		c := list["chats"].([]any)[0].(map[string]any)
		return c["unread"]
	}
	if got := unread(); got != 2.0 {
		t.Fatalf("unread: got %v, want 2", got)
	}
	e.mustCall(t, 201, "alice", "DELETE", base+"/"+m1+"?cid=d1", nil)
	if got := unread(); got != 1.0 {
		t.Fatalf("unread after delete: got %v, want 1", got)
	}
}
