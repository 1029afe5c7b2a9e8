package node_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
)

// A Start that fails after it began acquiring things returns the error and
// releases what it took; it used to panic closing a nil node (the named
// result is nil by the time the deferred cleanup runs), which hid every
// startup error, such as a --max-body-bytes no envelope can fit.
func TestStartFailureReturnsAnError(t *testing.T) {
	cfg := node.Config{
		DatabaseURL: "postgres://chatd@127.0.0.1:1/none?connect_timeout=1",
		NATSURL:     "nats://127.0.0.1:1",
		JWTSecret:   "secret", NodeID: "t",
	}
	n, err := nodetest.Start(t, cfg)
	if err == nil || n != nil {
		t.Fatalf("start against nothing: got %v, %v; want nil and an error", n, err)
	}
}

// A second node on a data dir a running node uses fails at once, naming
// the data dir and what to do, instead of waiting on the first's embedded
// PostgreSQL and then telling the operator to stop it. Once the first has
// stopped, the data dir is free again.
func TestDataDirInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := nodetest.Start(t, node.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	second, err := nodetest.Start(t, node.Config{DataDir: dir})
	if err == nil || second != nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("second node on %s: %v, %v; want a refusal naming the data dir and --data-dir", dir, second, err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the refusal took %v; want it at once", waited)
	}
	t.Logf("refused: %v", err)
	first.Close()
	again, err := nodetest.Start(t, node.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("a node on %s after the first stopped: %v", dir, err)
	}
	again.Close()
}

// A node a test runs as root on a t.TempDir keeps its PostgreSQL cluster
// under /var/lib/chatd (the postgres user cannot reach the temp dir); the
// harness removes it when the node's test ends, as the data dir is, so
// test runs do not leave 50 MB a node behind.
func TestHarnessRemovesAMovedCluster(t *testing.T) {
	dir := t.TempDir()
	var pgDir string
	t.Run("node", func(t *testing.T) {
		n := nodetest.Run(t, node.Config{DataDir: dir})
		pgDir = n.Postgres().Dir()
	})
	if strings.HasPrefix(pgDir, dir) {
		t.Skipf("the cluster is in the data dir (%s): not run as root, nothing was moved", pgDir)
	}
	if _, err := os.Stat(pgDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("cluster %s, kept outside the data dir %s, is still there after the node's test ended (stat: %v)", pgDir, dir, err)
	}
}
