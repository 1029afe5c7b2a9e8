package api_test

import (
	"testing"

	"github.com/chatd/chatd/pkg/api"
)

func TestDevLoginIsOffByDefault(t *testing.T) {
	e := mustEnv(t)
	status, out, _ := e.call(t, "", "POST", "/api/dev/login", map[string]any{"user": "alice"})
	if status != 404 || out["token"] != nil {
		t.Errorf("POST /api/dev/login without DevLogin: %d %v, want 404 and no token", status, out)
	}
}

func TestDevLoginIssuesAWorkingToken(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.DevLogin = true })
	out := e.mustCall(t, 200, "", "POST", "/api/dev/login", map[string]any{"user": "alice", "device": "tab-1"})
	tok, _ := out["token"].(string)
	if tok == "" || out["user"] != "alice" {
		t.Fatalf("dev login: %v, want a token for alice", out)
	}
	if status, body, _ := e.callToken(t, tok, "GET", "/api/chats", nil); status != 200 {
		t.Errorf("GET /api/chats with the dev token: %d %v, want 200", status, body)
	}
	_, hello := e.dial(t, "alice", "tab-1") // a token of chatd token works alike
	if hello["user"] != "alice" {
		t.Errorf("hello %v", hello)
	}

	for name, body := range map[string]any{
		"bad charset": map[string]any{"user": "al ice"},
		"empty":       map[string]any{"user": ""},
		"bad device":  map[string]any{"user": "alice", "device": "a/b"},
		"not json":    "{",
	} {
		t.Run(name, func(t *testing.T) {
			e.wantError(t, 400, "invalid", "", "POST", "/api/dev/login", body)
		})
	}
}
