package api_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
)

func TestRESTAuthFailures(t *testing.T) {
	e := mustEnv(t)
	for name, tok := range badTokens(t) {
		t.Run(name, func(t *testing.T) {
			status, out, h := e.callToken(t, tok, "GET", "/api/chats", nil)
			if status != 401 || out["code"] != "unauthorized" {
				t.Errorf("got %d %v, want 401 unauthorized", status, out)
			}
			if h.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	t.Run("basic scheme", func(t *testing.T) {
		status, _, _ := e.callToken(t, "", "GET", "/api/chats", nil)
		if status != 401 {
			t.Errorf("got %d, want 401", status)
		}
	})
}

func TestRESTGroupAndDirectChats(t *testing.T) {
	e := mustEnv(t)
	out := e.mustCall(t, 201, "alice", "POST", "/api/chats", map[string]any{"members": []string{"bob", "carol"}, "title": "x"})
	if out["kind"] != "group" || out["id"] == "" {
		t.Fatalf("group chat: %v", out)
	}
	members := toStrings(out["members"])
	for _, u := range []string{"alice", "bob", "carol"} {
		if !slices.Contains(members, u) {
			t.Errorf("members %v lack %s", members, u)
		}
	}
	group := out["id"].(string)

	d1 := e.mustCall(t, 201, "alice", "POST", "/api/chats/direct", map[string]any{"user": "bob"})
	d2 := e.mustCall(t, 200, "alice", "POST", "/api/chats/direct", map[string]any{"user": "bob"})
	d3 := e.mustCall(t, 200, "bob", "POST", "/api/chats/direct", map[string]any{"user": "alice"})
	if d1["id"] != d2["id"] || d1["id"] != d3["id"] || d1["kind"] != "direct" {
		t.Fatalf("direct chats %v, %v, %v: want one stable id", d1, d2, d3)
	}

	list := e.mustCall(t, 200, "bob", "GET", "/api/chats", nil)
	ids := chatIDs(list)
	if !slices.Contains(ids, group) || !slices.Contains(ids, d1["id"].(string)) {
		t.Errorf("bob's chats %v, want %s and %s", ids, group, d1["id"])
	}
	if ids := chatIDs(e.mustCall(t, 200, "dave", "GET", "/api/chats", nil)); len(ids) != 0 {
		t.Errorf("dave's chats %v, want none", ids)
	}

	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats", `{"members":`)
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats", map[string]any{"members": []string{"b c"}})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats", map[string]any{"members": "bob"})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats", map[string]any{"title": strings.Repeat("t", 201)})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/direct", map[string]any{})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/direct", map[string]any{"user": "no way"})
}

func TestRESTMembers(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	out := e.mustCall(t, 200, "bob", "POST", "/api/chats/"+chat+"/members", map[string]any{"user": "dave"})
	if !slices.Contains(toStrings(out["members"]), "dave") {
		t.Errorf("members after add: %v", out["members"])
	}
	e.wantError(t, 403, "forbidden", "carol", "POST", "/api/chats/"+chat+"/members", map[string]any{"user": "carol"})
	e.wantError(t, 404, "not_found", "alice", "POST", "/api/chats/nochat/members", map[string]any{"user": "carol"})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/"+chat+"/members", map[string]any{"user": ""})
	direct := e.mustCall(t, 201, "alice", "POST", "/api/chats/direct", map[string]any{"user": "bob"})["id"].(string)
	e.wantError(t, 409, "conflict", "alice", "POST", "/api/chats/"+direct+"/members", map[string]any{"user": "carol"})
	e.wantError(t, 409, "conflict", "alice", "DELETE", "/api/chats/"+direct+"/members/bob", nil)

	e.wantError(t, 403, "forbidden", "carol", "DELETE", "/api/chats/"+chat+"/members/bob", nil)
	e.wantError(t, 404, "not_found", "alice", "DELETE", "/api/chats/nochat/members/bob", nil)
	e.mustCall(t, 204, "alice", "DELETE", "/api/chats/"+chat+"/members/dave", nil)
	// dave is out: every chat call is now 403 for him.
	e.wantError(t, 403, "forbidden", "dave", "GET", "/api/chats/"+chat+"/messages", nil)
	e.wantError(t, 403, "forbidden", "dave", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k", "body": "hi"})
}

func TestRESTSendIsIdempotentOnCID(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	first := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k1", "body": "hello"})
	if first["seq"] != 1.0 || first["cid"] != "k1" || first["id"] == "" || first["ts"] == "" {
		t.Fatalf("first send: %v", first)
	}
	again := e.mustCall(t, 200, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k1", "body": "hello"})
	if again["id"] != first["id"] || again["seq"] != first["seq"] || again["ts"] != first["ts"] {
		t.Errorf("resend: got %v, want the original %v", again, first)
	}
	// Idempotency is per sender: bob's k1 is another message.
	bob := e.mustCall(t, 201, "bob", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k1", "body": "hi"})
	if bob["id"] == first["id"] || bob["seq"] != 2.0 {
		t.Errorf("bob's send: %v", bob)
	}
	if msgs := e.history(t, "bob", chat); len(msgs) != 2 {
		t.Errorf("history has %d messages, want 2", len(msgs))
	}

	e.wantError(t, 403, "forbidden", "carol", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k2", "body": "x"})
	e.wantError(t, 404, "not_found", "alice", "POST", "/api/chats/nochat/messages", map[string]any{"cid": "k2", "body": "x"})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k2", "body": ""})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"body": "x"})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "a b", "body": "x"})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/"+chat+"/messages", "nope")
	e.wantError(t, 400, "too_large", "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k2", "body": strings.Repeat("x", 4097)})
	e.wantError(t, 400, "invalid", "alice", "POST", "/api/chats/bad%20id/messages", map[string]any{"cid": "k2", "body": "x"})
}

func TestRESTHistoryPaging(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	var ids []string
	for i := range 5 {
		out := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": fmt.Sprint("k", i), "body": fmt.Sprint("m", i)})
		ids = append(ids, out["id"].(string))
	}
	path := "/api/chats/" + chat + "/messages"

	// since-paging with limit 2: 2 + 2 + 1, next null at the end.
	var got []string
	next := ""
	for pages := 0; ; pages++ {
		q := path + "?limit=2"
		if next != "" {
			q += "&since=" + next
		}
		page := e.mustCall(t, 200, "bob", "GET", q, nil)
		got = append(got, pageIDs(page)...)
		n, ok := page["next"].(string)
		if !ok {
			if page["next"] != nil {
				t.Fatalf("next = %v, want a string or null", page["next"])
			}
			break
		}
		if n != got[len(got)-1] {
			t.Errorf("next %s, want the page's last id %s", n, got[len(got)-1])
		}
		next = n
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("paged ids %v, want %v", got, ids)
	}

	if g := pageIDs(e.mustCall(t, 200, "bob", "GET", path+"?since="+ids[1], nil)); !slices.Equal(g, ids[2:]) {
		t.Errorf("since=%s: %v, want %v", ids[1], g, ids[2:])
	}
	if g := pageIDs(e.mustCall(t, 200, "bob", "GET", path+"?since=01HUNKNOWNUNKNOWNUNKNOWN00", nil)); !slices.Equal(g, ids) {
		t.Errorf("unknown since: %v, want from the oldest %v", g, ids)
	}
	page := e.mustCall(t, 200, "bob", "GET", path+"?after_seq=3", nil)
	if g := pageIDs(page); !slices.Equal(g, ids[3:]) || page["next"] != nil {
		t.Errorf("after_seq=3: %v next %v, want %v next null", g, page["next"], ids[3:])
	}
	if g := pageIDs(e.mustCall(t, 200, "bob", "GET", path+"?limit=5000", nil)); !slices.Equal(g, ids) {
		t.Errorf("limit over the cap: %v", g)
	}
	msgs := e.history(t, "alice", chat)
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.From != "alice" || m.Chat != chat || m.CID != "k"+strconv.Itoa(i) || m.TS.IsZero() {
			t.Errorf("message %d: %+v", i, m)
		}
	}

	for _, q := range []string{"?limit=0", "?limit=-1", "?limit=abc", "?after_seq=-1", "?after_seq=x", "?since=a%20b", "?since=" + ids[0] + "&after_seq=1"} {
		e.wantError(t, 400, "invalid", "bob", "GET", path+q, nil)
	}
	e.wantError(t, 403, "forbidden", "carol", "GET", path, nil)
	e.wantError(t, 404, "not_found", "bob", "GET", "/api/chats/nochat/messages", nil)
}

func TestRESTRateLimit(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.REST.RatePerSecond, c.REST.Burst = 1, 2 })
	e.mustCall(t, 200, "alice", "GET", "/api/chats", nil)
	e.mustCall(t, 200, "alice", "GET", "/api/chats", nil)
	status, out, h := e.call(t, "alice", "GET", "/api/chats", nil)
	if status != 429 || out["code"] != "rate_limited" {
		t.Fatalf("third call: %d %v, want 429 rate_limited", status, out)
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q, want whole seconds ≥ 1", h.Get("Retry-After"))
	}
	// The bucket is per user.
	e.mustCall(t, 200, "bob", "GET", "/api/chats", nil)
}

func TestHealthReadyMetrics(t *testing.T) {
	e := mustEnv(t)
	e.mustCall(t, 200, "", "GET", "/healthz", nil)
	e.mustCall(t, 200, "", "GET", "/readyz", nil)
	status, _, _ := e.call(t, "", "GET", "/metrics", nil)
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	e.wantError(t, 404, "not_found", "alice", "GET", "/api/nothing", nil)

	down := mustEnv(t, func(c *api.Config) {
		c.Ready = func(context.Context) error { return errors.New("postgres: down") }
	})
	down.wantError(t, 503, "unavailable", "", "GET", "/readyz", nil)
	down.mustCall(t, 200, "", "GET", "/healthz", nil)
}

func TestAdminOutbox(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.AdminUsers = []string{"root"}
		c.Outbox = func(context.Context) (any, error) { return map[string]int{"postgres_outbox_depth": 0}, nil }
	})
	e.wantError(t, 403, "forbidden", "alice", "GET", "/api/admin/outbox", nil)
	if out := e.mustCall(t, 200, "root", "GET", "/api/admin/outbox", nil); out["postgres_outbox_depth"] != 0.0 {
		t.Errorf("outbox view: %v", out)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func chatIDs(list map[string]any) []string {
	var ids []string
	for _, c := range list["chats"].([]any) {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	return ids
}

func pageIDs(page map[string]any) []string {
	var ids []string
	for _, m := range page["messages"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	return ids
}
