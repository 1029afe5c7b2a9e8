package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
)

// oddValues are what a careless or hostile client puts in a field: the
// wrong type, nothing, a NUL, a lone surrogate, a right-to-left override,
// a number too large for any integer, a deep nest, a long string.
var oddValues = []string{
	`null`, `1`, `-1`, `1e999`, `true`, `""`, `"x"`, `"a\u0000b"`, `"\ud800"`, `"\u202e"`,
	`[]`, `["\u0000"]`, `{}`, `{"\u0000":"\u0000"}`, strings.Repeat("[", 512) + strings.Repeat("]", 512),
	`"` + strings.Repeat("x", 5000) + `"`,
}

// oddBodies are whole bodies that are not the object any call takes.
var oddBodies = []string{``, `{`, `null`, `[]`, `"x"`, `1`, `{"a":1,"a":2}`, "{\"x\":\"\xff\"}"}

// oddRig is a server where alice is an admin with no REST budget to run
// out of, a group of alice, bob and carol, and a message of alice's in it:
// the real ids a sweep puts in its paths, and alice's token.
func oddRig(t *testing.T) (e *env, tok, chat, mid string) {
	t.Helper()
	e = mustEnv(t, func(c *api.Config) {
		c.AdminUsers = []string{"alice"}
		c.REST = api.RateLimit{RatePerSecond: 1 << 20, Burst: 1 << 20}
	})
	chat = e.mustGroup(t, "alice", "bob", "carol")
	sent := e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "odd-1", "body": "first"})
	return e, apitest.Token(t, testSecret, "alice", ""), chat, sent["id"].(string)
}

// Every call that takes a body answers odd bodies, and each of its fields
// set to each odd value, as the OpenAPI document says (the checking client
// fails the test otherwise: an undocumented status or body, a 5xx for bad
// input, or a 2xx for a request the document calls invalid). The calls run
// on a real chat and message as a member and admin, so the body is what
// is judged, not the path.
func TestOddBodiesAnsweredAsDocumented(t *testing.T) {
	t.Parallel()
	e, tok, chat, mid := oddRig(t)
	doc, err := openapi3Doc()
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{id}", chat, "{mid}", mid, "{user}", "carol")
	requests := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.RequestBody == nil {
				continue
			}
			url := fill.Replace(path)
			for _, b := range oddBodies {
				e.send(t, method, url, tok, "application/json", []byte(b), nil)
				requests++
			}
			media := op.RequestBody.Value.Content.Get("application/json")
			if media == nil || media.Schema == nil {
				continue
			}
			for field := range media.Schema.Value.Properties {
				for _, v := range oddValues {
					body := map[string]json.RawMessage{"cid": json.RawMessage(`"odd-` + field + `"`), field: json.RawMessage(v)}
					raw, err := json.Marshal(body)
					if err != nil {
						t.Fatal(err)
					}
					resp, answer := e.send(t, method, url, tok, "application/json", raw, nil)
					requests++
					if resp.StatusCode >= 500 {
						t.Errorf("%s %s with %s: %d %s; bad input must get a 4xx", method, url, clip(raw), resp.StatusCode, clip(answer))
					}
				}
			}
		}
	}
	if requests < 200 {
		t.Fatalf("%d requests: the document's calls with bodies were not found", requests)
	}
	t.Logf("%d requests, each answered as documented", requests)
	if code, _, _ := e.call(t, "bob", "GET", "/api/chats/"+chat+"/messages", nil); code != http.StatusOK {
		t.Fatalf("history after the sweep: %d, want 200", code)
	}
}

// oddParams are what a careless or hostile client puts in a query or path
// parameter, escaped for the URL.
var oddParams = []string{"", "-1", "0", "abc", "%00", "%FF", "1e9", "99999999999999999999999", "%E2%80%AE", "a%2Fb", strings.Repeat("9", 300)}

// Every call answers each of its query parameters, and each path
// parameter, set to each odd value as the document says, on a real chat
// and message as a member and admin.
func TestOddParametersAnsweredAsDocumented(t *testing.T) {
	t.Parallel()
	e, tok, chat, mid := oddRig(t)
	ids := map[string]string{"id": chat, "mid": mid, "user": "carol"}
	doc, err := openapi3Doc()
	if err != nil {
		t.Fatal(err)
	}
	requests := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
				continue // their bodies are TestOddBodiesAnsweredAsDocumented's
			}
			url := path
			for name, v := range ids {
				url = strings.ReplaceAll(url, "{"+name+"}", v)
			}
			for _, p := range append(item.Parameters, op.Parameters...) {
				for _, v := range oddParams {
					var target string
					switch p.Value.In {
					case "query":
						target = url + "?" + p.Value.Name + "=" + v
					case "path":
						// An empty segment is another path; an encoded
						// slash the checker's router decodes before
						// matching, so it cannot place the call (the
						// server answers it 400: not an id).
						if v == "" || strings.Contains(v, "%2F") {
							continue
						}
						target = strings.ReplaceAll(path, "{"+p.Value.Name+"}", v)
						for name, id := range ids {
							target = strings.ReplaceAll(target, "{"+name+"}", id)
						}
					default:
						continue
					}
					resp, answer := e.send(t, method, target, tok, "", nil, nil)
					requests++
					if resp.StatusCode >= 500 {
						t.Errorf("%s %s: %d %s; bad input must get a 4xx", method, target, resp.StatusCode, clip(answer))
					}
				}
			}
		}
	}
	if requests < 100 {
		t.Fatalf("%d requests: the document's parameters were not found", requests)
	}
	t.Logf("%d requests, each answered as documented", requests)
}
