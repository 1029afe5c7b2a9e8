package node_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
)

// A node with the development login on says so at WARN when it is ready,
// with its address: anyone who reaches it may sign in as anyone, and an
// operator who copied `make run`'s flags to a server must see that in the
// log, not only in --help. (Off, the start logs no WARN at all:
// TestStartupIsQuietAndTrue.)
func TestDevLoginWarnsAtStart(t *testing.T) {
	var logs testlog.Buffer
	cfg := node.Config{
		DataDir: filepath.Join(mustTempDir(t, 0o755), "data"), Listen: "127.0.0.1:0",
		API:    api.Config{DevLogin: true},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	n := nodetest.Run(t, cfg)
	if err := n.Stop(t); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "--dev-login") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], n.URL()) {
		t.Fatalf("want one WARN naming --dev-login and %s, got %q in:\n%s", n.URL(), warned, logs.String())
	}
}
