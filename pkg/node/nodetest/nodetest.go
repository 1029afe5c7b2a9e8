// Package nodetest runs real chatd nodes in tests: node.Start, then Run on a
// goroutine the test owns, stopped (in the node's own shutdown order) by Stop
// or when the test ends. The end-to-end, client and load tests share it.
package nodetest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/pkg/node"
)

// stopTimeout bounds a node's orderly shutdown in a test.
const stopTimeout = 20 * time.Second

// Node is a running node.
type Node struct {
	*node.Node
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start is node.Start with the harness's defaults, for a test that wants
// the start to fail. A node that does start is closed when t ends.
func Start(t testing.TB, cfg node.Config) (*node.Node, error) {
	t.Helper()
	n, err := node.Start(context.Background(), withDefaults(cfg))
	if err == nil {
		t.Cleanup(func() {
			n.Close()
			removeMovedCluster(t, n, cfg.DataDir)
		})
	}
	return n, err
}

// removeMovedCluster deletes, once n has stopped, the PostgreSQL cluster n
// kept outside its data dir: tests run as root start the server as the
// postgres user, which cannot reach a t.TempDir, so the cluster goes under
// /var/lib/chatd (embedded.PostgresConfig.ReachableRoot). The data dir goes
// with the test; the moved cluster would stay behind, 50 MB a node.
func removeMovedCluster(t testing.TB, n *node.Node, dataDir string) {
	t.Helper()
	pg := n.Postgres()
	if pg == nil || dataDir == "" || filepath.Base(pg.Dir()) != "pg" {
		return
	}
	if rel, err := filepath.Rel(dataDir, pg.Dir()); err == nil && !strings.HasPrefix(rel, "..") {
		return // inside the data dir, which the test removes
	}
	if err := os.RemoveAll(filepath.Dir(pg.Dir())); err != nil {
		t.Errorf("remove the cluster node %s kept outside its data dir: %v", n.NodeID(), err)
	}
}

// withDefaults fills in what a test leaves empty: Listen becomes
// 127.0.0.1:0, since node.Config's own default is the address `make run`
// holds, and a nil Logger discards.
func withDefaults(cfg node.Config) node.Config {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cfg
}

// Run starts a node with cfg (with Start's defaults) and runs it until Stop
// or the end of t. It fails t if the node cannot start, and reports an
// error from its Run.
func Run(t testing.TB, cfg node.Config) *Node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := node.Start(ctx, withDefaults(cfg))
	if err != nil {
		cancel()
		t.Fatalf("start node %s: %v", cfg.NodeID, err)
	}
	rn := &Node{Node: n, cancel: cancel, done: make(chan error, 1)}
	go func() { rn.done <- n.Run(ctx) }()
	t.Cleanup(func() {
		if err := rn.Stop(t); err != nil {
			t.Errorf("node %s run: %v", rn.NodeID(), err)
		}
		removeMovedCluster(t, n, cfg.DataDir)
	})
	// A node refuses WebSockets (503) until its delivery consumer exists;
	// tests talk to it at once, so wait for that here.
	deadline := time.Now().Add(stopTimeout)
	for n.Push.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("node %s: live delivery not ready within %v: %v", cfg.NodeID, stopTimeout, n.Push.Ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return rn
}

// Stop cancels the node and waits for its orderly shutdown, returning its
// Run's error. It is safe to call more than once.
func (n *Node) Stop(t testing.TB) error {
	t.Helper()
	n.once.Do(func() {
		n.cancel()
		select {
		case n.err = <-n.done:
		case <-time.After(stopTimeout):
			t.Fatalf("node %s did not shut down within %v", n.NodeID(), stopTimeout)
		}
	})
	return n.err
}

// NATS starts an in-process NATS with JetStream and a TCP listener (a node
// given NATSURL needs one; port 0 picks a free one), shut down when t ends.
func NATS(t testing.TB, storeDir, listen string) *embedded.NATS {
	t.Helper()
	ns, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: storeDir, Listen: listen})
	if err != nil {
		t.Fatalf("start nats on %s: %v", listen, err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// Metric adds up every series (counter or gauge) of the named metric in n's
// registry.
func Metric(t testing.TB, n *node.Node, name string) float64 {
	t.Helper()
	return testmetric.Sum(t, n.Registry(), name)
}
