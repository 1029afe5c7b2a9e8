package e2e_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/node"
)

// The profiler does not serve the command line: it would show a secret
// passed as --jwt-secret to anyone who can reach the debug listener.
func TestDebugListenerHidesCommandLine(t *testing.T) {
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	rn := mustRunNode(t, nodeConfig(testpg.NewDatabase(t), ns.ClientURL(), "n1", node.Config{DebugListen: "127.0.0.1:0"}))
	base := "http://" + rn.DebugAddr()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/cmdline: %d %q, want 404", code, body)
	}
	if code, _ := get("/debug/pprof/goroutine?debug=1"); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/goroutine: %d, want 200 (the profiles stay)", code)
	}
}
