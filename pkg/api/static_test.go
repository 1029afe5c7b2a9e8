package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/web"
)

// get fetches path with optional headers (name, value pairs) and returns the
// response with its body read; an answer to a call is checked against the
// OpenAPI document.
func get(t *testing.T, method, url string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := checkedClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// The demo and the SDK are served from the files embedded in the binary
// (package web), with content types a browser runs as modules.
func TestStaticServesEmbeddedDemo(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.Demo, c.SDK = web.Demo(), web.SDK() })
	tests := []struct {
		name, path, wantType, wantBody string
	}{
		{"index at /", "/", "text/html; charset=utf-8", `<script type="module"`},
		{"index by name", "/index.html", "text/html; charset=utf-8", `<script type="module"`},
		{"app module", "/app.js", "text/javascript; charset=utf-8", "import"},
		{"stylesheet", "/style.css", "text/css; charset=utf-8", "{"},
		{"SDK", "/sdk/index.js", "text/javascript; charset=utf-8", "export"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, "GET", e.base+tt.path)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: status %d, want 200", tt.path, resp.StatusCode)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.wantType {
				t.Errorf("GET %s: Content-Type %q, want %q", tt.path, got, tt.wantType)
			}
			if !strings.Contains(body, tt.wantBody) {
				t.Errorf("GET %s: body lacks %q", tt.path, tt.wantBody)
			}
			if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("GET %s: Cache-Control %q, want no-cache", tt.path, got)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatalf("GET %s: no ETag", tt.path)
			}
			again, rest := get(t, "GET", e.base+tt.path, "If-None-Match", etag)
			if again.StatusCode != 304 || rest != "" {
				t.Errorf("GET %s If-None-Match %s: status %d with %d bytes, want 304 and none", tt.path, etag, again.StatusCode, len(rest))
			}
		})
	}
	t.Run("page headers", func(t *testing.T) {
		resp, _ := get(t, "GET", e.base+"/")
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("CSP %q, want script-src 'self'", csp)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("X-Content-Type-Options %q, want nosniff", got)
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		resp, _ := get(t, "HEAD", e.base+"/app.js")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("HEAD /app.js: %d %q, want 200 text/javascript", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("unknown file", func(t *testing.T) {
		for _, p := range []string{"/nope.js", "/sdk/nope.js", "/../go.mod", "/demo/index.html", "/sdk/src/index.js", "/sdk/package.json"} {
			if resp, _ := get(t, "GET", e.base+p); resp.StatusCode != 404 {
				t.Errorf("GET %s: status %d, want 404", p, resp.StatusCode)
			}
		}
	})
	t.Run("api routes are not shadowed", func(t *testing.T) {
		if resp, _ := get(t, "GET", e.base+"/api/chats"); resp.StatusCode != 401 {
			t.Errorf("GET /api/chats without token: status %d, want 401", resp.StatusCode)
		}
		if resp, _ := get(t, "GET", e.base+"/healthz"); resp.StatusCode != 200 {
			t.Errorf("GET /healthz: status %d, want 200", resp.StatusCode)
		}
	})
}

func TestStaticServesSDKUnderSDK(t *testing.T) {
	sdk := fstest.MapFS{
		"index.js":     {Data: []byte("export * from './client.js';\n")},
		"client.js":    {Data: []byte("export class ChatClient {}\n")},
		"lib/frame.js": {Data: []byte("export const x = 1;\n")},
	}
	e := mustEnv(t, func(c *api.Config) { c.SDK = sdk })
	for _, p := range []string{"/sdk/index.js", "/sdk/client.js", "/sdk/lib/frame.js"} {
		resp, body := get(t, "GET", e.base+p)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || !strings.Contains(body, "export") {
			t.Errorf("GET %s: %d %q %q, want 200 text/javascript with the file", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// Without a demo there is no page.
	if resp, _ := get(t, "GET", e.base+"/"); resp.StatusCode != 404 {
		t.Errorf("GET / without a demo: status %d, want 404", resp.StatusCode)
	}
}
