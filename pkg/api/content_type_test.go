package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
)

// A request body must be JSON: any other Content-Type, or none, is 415
// with the JSON error naming application/json; parameters such as charset
// are fine, and requests without a body are not affected.
func TestNonJSONBodyIs415(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, func(c *api.Config) { c.DevLogin = true })
	tok := apitest.Token(t, testSecret, "alice", "")
	create := []byte(`{"members":["bob"],"title":"t"}`)
	tests := []struct {
		name, method, path, ctype string
		body                      []byte
		want                      int
	}{
		{"text/plain", "POST", "/api/chats", "text/plain", create, 415},
		{"fetch's default for a string", "POST", "/api/chats", "text/plain;charset=UTF-8", create, 415},
		{"curl's default for -d", "POST", "/api/chats", "application/x-www-form-urlencoded", create, 415},
		{"no Content-Type", "POST", "/api/chats", "", create, 415},
		{"a JSON suffix type", "POST", "/api/chats", "application/merge-patch+json", create, 415},
		{"unparsable", "POST", "/api/chats", "application/json;;", create, 415},
		{"JSON", "POST", "/api/chats", "application/json", create, 201},
		{"JSON with charset", "POST", "/api/chats", "application/json; charset=utf-8", create, 201},
		{"JSON in capitals", "POST", "/api/chats", "Application/JSON", create, 201},
		{"dev login", "POST", "/api/dev/login", "text/plain", []byte(`{"user":"carol"}`), 415},
		{"no body, text/plain", "GET", "/api/chats", "text/plain", nil, 200},
		{"DELETE without a body", "DELETE", "/api/chats/x1/members/bob", "text/plain", nil, 404},
		{"an empty POST is the handler's", "POST", "/api/chats/direct", "text/plain", nil, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw := e.send(t, tt.method, tt.path, tok, tt.ctype, tt.body, nil)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s with Content-Type %q: got status %d %s, want %d", tt.method, tt.path, tt.ctype, resp.StatusCode, raw, tt.want)
			}
			if tt.want != 415 {
				return
			}
			var out map[string]string
			if err := json.Unmarshal(raw, &out); err != nil || out["code"] != "invalid" || !strings.Contains(out["error"], "application/json") {
				t.Errorf("got body %s, want code invalid and an error naming application/json", raw)
			}
		})
	}
	// Every call of the document that takes a body refuses text/plain.
	for _, c := range documentCalls(t) {
		if !c.body {
			continue
		}
		if resp, raw := e.send(t, c.method, c.path, tok, "text/plain", []byte(`{}`), nil); resp.StatusCode != 415 {
			t.Errorf("%s %s with text/plain: got status %d %s, want 415", c.method, c.path, resp.StatusCode, raw)
		}
	}
}

// With the development login off, its route answers 404 whatever the
// body, as if it did not exist: a 415 would tell it is there.
func TestDevLoginOffIs404WhateverTheBody(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	if resp, raw := e.send(t, "POST", "/api/dev/login", "", "text/plain", []byte(`{"user":"carol"}`), nil); resp.StatusCode != 404 {
		t.Fatalf("got status %d %s, want 404", resp.StatusCode, raw)
	}
}
