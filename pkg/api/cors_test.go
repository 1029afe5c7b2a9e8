package api_test

import (
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
)

func preflight(t *testing.T, e *env, origin string) (int, string, string) {
	t.Helper()
	resp, _ := get(t, "OPTIONS", e.base+"/api/chats",
		"Origin", origin,
		"Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization,content-type")
	return resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Headers")
}

func TestCORSPreflightFollowsAllowedOrigins(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.AllowedOrigins = []string{"https://app.example"} })
	t.Run("listed origin", func(t *testing.T) {
		status, allow, headers := preflight(t, e, "https://app.example")
		if status != 204 || allow != "https://app.example" {
			t.Errorf("preflight: %d, Allow-Origin %q, want 204 and the origin", status, allow)
		}
		for _, h := range []string{"authorization", "content-type"} {
			if !strings.Contains(strings.ToLower(headers), h) {
				t.Errorf("Allow-Headers %q lacks %s", headers, h)
			}
		}
	})
	t.Run("unlisted origin", func(t *testing.T) {
		if _, allow, _ := preflight(t, e, "https://evil.example"); allow != "" {
			t.Errorf("preflight from an unlisted origin: Allow-Origin %q, want none", allow)
		}
	})
	t.Run("actual request", func(t *testing.T) {
		resp, _ := get(t, "GET", e.base+"/api/chats", "Origin", "https://app.example", "Authorization", "Bearer "+apitest.Token(t, testSecret, "alice", ""))
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
			t.Errorf("GET with Origin: %d, Allow-Origin %q, want 200 and the origin", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
		resp, _ = get(t, "GET", e.base+"/api/chats", "Origin", "https://evil.example", "Authorization", "Bearer "+apitest.Token(t, testSecret, "alice", ""))
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("GET from an unlisted origin: Allow-Origin %q, want none", got)
		}
	})
}

func TestCORSOffWithoutAllowedOrigins(t *testing.T) {
	e := mustEnv(t)
	if _, allow, _ := preflight(t, e, "https://app.example"); allow != "" {
		t.Errorf("preflight with no allowed origins: Allow-Origin %q, want none", allow)
	}
}

func TestCORSAnyOrigin(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.AllowedOrigins = []string{"*"} })
	if status, allow, _ := preflight(t, e, "https://anything.example"); status != 204 || allow != "*" {
		t.Errorf("preflight with *: %d %q, want 204 *", status, allow)
	}
}
