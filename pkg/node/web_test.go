package node_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
)

// A node serves the demo and the SDK from its binary, and its development
// login is off unless asked for.
func TestNodeServesTheWebFilesAndNoDevLoginByDefault(t *testing.T) {
	n := nodetest.Run(t, node.Config{DataDir: filepath.Join(mustTempDir(t, 0o755), "data")})
	for _, tt := range []struct{ path, ctype, body string }{
		{"/", "text/html", "<script type=\"module\""},
		{"/sdk/index.js", "text/javascript", "export"},
	} {
		resp, err := http.Get(n.URL() + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) || !strings.Contains(string(body), tt.body) {
			t.Errorf("GET %s: %d %q, want 200 %s with %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.ctype, tt.body)
		}
	}
	resp, err := http.Post(n.URL()+"/api/dev/login", "application/json", strings.NewReader(`{"user":"alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("POST /api/dev/login on a default node: %d, want 404", resp.StatusCode)
	}
}
