package node_test

import (
	"testing"

	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/store"
)

// The node's PostgreSQL pool is as large as --database-pool says, so
// nodes sharing a database can be kept under its max_connections.
func TestDatabasePoolSizeReachesThePool(t *testing.T) {
	cfg := externalConfig(t, nodetest.NATS(t, t.TempDir(), "127.0.0.1:0").ClientURL(), "n1")
	cfg.Store = store.Config{MaxConns: 5}
	n := nodetest.Run(t, cfg)
	if got := n.Store.Pool().Config().MaxConns; got != 5 {
		t.Fatalf("pool max conns %d, want 5", got)
	}
}
