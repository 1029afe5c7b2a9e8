package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// mustSendN posts n messages as user into chat and returns their ids in
// seq order.
func mustSendN(t *testing.T, e *env, user, chat string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		out := e.mustCall(t, 201, user, "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": fmt.Sprint("k", i), "body": fmt.Sprint("m", i)})
		ids = append(ids, out["id"].(string))
	}
	return ids
}

// A client opening a chat reads its newest page first and pages up from
// there (the demo does): `before=<seq>` returns the messages just below
// that seq, oldest first like every page, and `prev` is the `before` of
// the next older page, null once the oldest retained message is in.
func TestRESTHistoryBeforePagesUp(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	ids := mustSendN(t, e, "alice", chat, 7)
	path := "/api/chats/" + chat + "/messages"

	page := e.mustCall(t, 200, "bob", "GET", path+"?before=5&limit=2", nil)
	if g := pageIDs(page); !slices.Equal(g, ids[2:4]) {
		t.Errorf("before=5&limit=2: got %v, want %v (seqs 3 and 4)", g, ids[2:4])
	}
	if page["prev"] != float64(3) {
		t.Errorf("before=5&limit=2: prev %v, want 3", page["prev"])
	}
	if page["next"] != ids[3] {
		t.Errorf("before=5&limit=2: next %v, want the page's last id %s", page["next"], ids[3])
	}

	// From the newest (any before above the last seq) up to the oldest.
	var got [][]string
	before := "9223372036854775807"
	for pages := 0; ; pages++ {
		if pages > 7 {
			t.Fatal("paging up does not end")
		}
		page := e.mustCall(t, 200, "bob", "GET", path+"?limit=3&before="+before, nil)
		got = append(got, pageIDs(page))
		if page["prev"] == nil {
			break
		}
		before = fmt.Sprint(page["prev"])
	}
	want := [][]string{ids[4:7], ids[1:4], ids[0:1]}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("pages up from the newest: got %v, want %v", got, want)
	}

	page = e.mustCall(t, 200, "bob", "GET", path+"?before=1", nil)
	if g := pageIDs(page); len(g) != 0 || page["prev"] != nil || page["next"] != nil {
		t.Errorf("before=1: got %v prev %v next %v, want no messages, prev and next null", g, page["prev"], page["next"])
	}
	for _, q := range []string{"?before=0", "?before=-1", "?before=x", "?before=3&after_seq=1", "?before=3&since=" + ids[0]} {
		e.wantError(t, 400, "invalid", "bob", "GET", path+q, nil)
	}
}

// A parameter the server does not know is refused, naming it, rather than
// ignored: a client that misspells its cursor would otherwise page from
// the start and never learn why.
func TestRESTHistoryRefusesUnknownParameters(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	path := "/api/chats/" + chat + "/messages"
	for _, q := range []string{"?befor=3", "?limit=2&page=2", "?since_seq=1"} {
		name := strings.SplitN(q[strings.LastIndexByte(q, '&')+1:], "=", 2)[0]
		name = strings.TrimPrefix(name, "?")
		status, out, _ := e.call(t, "bob", "GET", path+q, nil)
		if msg, _ := out["error"].(string); status != 400 || out["code"] != "invalid" || !strings.Contains(msg, name) {
			t.Errorf("GET %s: %d %v, want 400 invalid naming %q", q, status, out, name)
		}
	}
}

// limit is capped, as the contract says, however large: also beyond int64.
func TestRESTHistoryCapsAnyLargeLimit(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	ids := mustSendN(t, e, "alice", chat, 3)
	path := "/api/chats/" + chat + "/messages"
	for _, limit := range []string{"1001", "9223372036854775807", "9223372036854775808", "99999999999999999999999999999"} {
		status, out, _ := e.call(t, "bob", "GET", path+"?limit="+limit, nil)
		if status != 200 {
			t.Errorf("limit=%s: status %d (%v), want 200 (capped)", limit, status, out)
			continue
		}
		if g := pageIDs(out); !slices.Equal(g, ids) {
			t.Errorf("limit=%s: got %v, want %v", limit, g, ids)
		}
	}
}

// A misspelt history parameter is refused with 400 naming it, not ignored
// (a client paging with `befor` would otherwise read the newest page again).
func TestRESTHistoryNamesUnknownParameters(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice")
	status, body, _ := e.call(t, "alice", "GET", "/api/chats/"+chat+"/messages?befor=5&limit=2&x=1", nil)
	msg, _ := body["error"].(string)
	if status != 400 || body["code"] != "invalid" || !strings.Contains(msg, `"befor", "x"`) || !strings.Contains(msg, "before") {
		t.Fatalf("got %d %v, want 400 invalid naming befor and x and the known parameters", status, body)
	}
}
