package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
)

// The document is served without a token, and is the one the tests check
// against.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	req, err := http.NewRequest("GET", e.base+"/api/openapi.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := e.do(t, req, nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/yaml") {
		t.Fatalf("GET /api/openapi.yaml: %d %s, want 200 application/yaml", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(body, api.OpenAPI()) || !bytes.HasPrefix(body, []byte("openapi: 3.1")) {
		t.Fatalf("served document differs from api.OpenAPI() or is not OpenAPI 3.1")
	}
	if _, err := openAPIRouter(); err != nil {
		t.Fatal(err)
	}
}

// recordTB records what checkOpenAPI reports instead of failing the test.
type recordTB struct {
	testing.TB
	errs []string
}

func (r *recordTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, format)
}

// The check can fail: answers and requests the document does not describe
// are reported, documented ones are not.
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	t.Parallel()
	chat := `{"id":"c1","kind":"group","title":"t","members":["alice"],"last_seq":0,"created_at":"2026-11-30T20:00:00Z"}`
	createOK := `{"members":["bob"],"title":"t"}`
	tests := []struct {
		name         string
		method, path string
		reqBody      string
		auth         bool
		status       int
		header       http.Header
		respBody     string
		wantErr      bool
	}{
		{"documented answer", "POST", "/api/chats", createOK, true, 201, nil, chat, false},
		{"undocumented status", "POST", "/api/chats", createOK, true, 418, nil, `{"error":"x","code":"invalid"}`, true},
		{"field missing", "POST", "/api/chats", createOK, true, 201, nil, `{"id":"c1","kind":"group","title":"t"}`, true},
		{"undocumented field", "POST", "/api/chats", createOK, true, 201, nil, strings.Replace(chat, `"title"`, `"extra":1,"title"`, 1), true},
		{"undocumented error code", "POST", "/api/chats", createOK, true, 400, nil, `{"error":"x","code":"teapot"}`, true},
		{"code of another status", "POST", "/api/chats", createOK, true, 400, nil, `{"error":"x","code":"forbidden"}`, true},
		{"invalid request accepted", "POST", "/api/chats/c1/messages", `{"body":"no cid"}`, true, 201, nil, `{"id":"m1","seq":1,"cid":"k","ts":"2026-11-30T20:00:00Z"}`, true},
		{"invalid request refused", "POST", "/api/chats/c1/messages", `{"body":"no cid"}`, true, 400, nil, `{"error":"x","code":"invalid"}`, false},
		{"no token accepted", "GET", "/api/chats", "", false, 200, nil, `{"chats":[]}`, true},
		{"401 without its header", "GET", "/api/chats", "", false, 401, nil, `{"error":"x","code":"unauthorized"}`, true},
		{"unknown path answered 200", "GET", "/api/nothing", "", true, 200, nil, `{}`, true},
		{"unknown path answered 404", "GET", "/api/nothing", "", true, 404, nil, `{"error":"x","code":"not_found"}`, false},
		{"body where none is described", "DELETE", "/api/chats/c1/members/bob", "", true, 204, nil, `{"x":1}`, true},
		{"Retry-After where not declared", "POST", "/api/chats", createOK, true, 400, http.Header{"Retry-After": {"1"}}, `{"error":"x","code":"invalid"}`, true},
		{"Retry-After where declared", "POST", "/api/chats", createOK, true, 429, http.Header{"Retry-After": {"1"}}, `{"error":"x","code":"rate_limited"}`, false},
		{"declared Retry-After missing", "POST", "/api/chats", createOK, true, 503, nil, `{"error":"x","code":"unavailable"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, "http://127.0.0.1:1"+tt.path, strings.NewReader(tt.reqBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tt.auth {
				req.Header.Set("Authorization", "Bearer x")
			}
			h := http.Header{"Content-Type": []string{"application/json"}}
			for k, v := range tt.header {
				h[k] = v
			}
			resp := &http.Response{StatusCode: tt.status, Header: h, Body: io.NopCloser(strings.NewReader(tt.respBody))}
			rec := &recordTB{TB: t}
			checkOpenAPI(rec, req, []byte(tt.reqBody), resp, []byte(tt.respBody))
			if got := len(rec.errs) > 0; got != tt.wantErr {
				t.Fatalf("reported %v, want an error: %v", rec.errs, tt.wantErr)
			}
		})
	}
}

// Every route the server registers is in the document and every operation
// of the document is a route: a new call cannot go undocumented, nor a
// removed one stay described.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	srv, err := api.New(api.Config{JWTSecret: testSecret, Chats: nopChats{}, Ingest: nopIngest{}, Delivery: nopDelivery{}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	router, err := openAPIRouter()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, r := range srv.App().GetRoutes(true) {
		if r.Method == http.MethodHead || r.Method == "CONNECT" || r.Method == "TRACE" {
			continue // Fiber adds HEAD for every GET
		}
		if strings.Contains(r.Path, "*") {
			continue // static files, not calls
		}
		// :id → {id}, as the document writes path parameters.
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = "{" + strings.TrimPrefix(p, ":") + "}"
			}
		}
		key := r.Method + " " + strings.Join(parts, "/")
		if registered[key] {
			continue
		}
		registered[key] = true
		req, err := http.NewRequest(r.Method, "http://127.0.0.1"+strings.NewReplacer("{", "", "}", "").Replace(strings.Join(parts, "/")), nil)
		if err != nil {
			t.Fatal(err)
		}
		if route, _, err := router.FindRoute(req); err != nil || route.Method+" "+route.Path != key {
			t.Errorf("route %s is not in openapi.yaml", key)
		}
	}
	doc, err := openapi3Doc()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !registered[method+" "+path] {
				t.Errorf("openapi.yaml describes %s %s, which the server does not serve", method, path)
			}
		}
	}
}
