package testpgha_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpgha"
)

// pg_auto_failover promotes the secondary by itself when the primary's
// machine dies.
func TestAutoFailoverPromotesTheSecondary(t *testing.T) {
	af := testpgha.StartAutoFailover(t)
	af.Nodes[0].Kill(t)
	start := time.Now()
	af.WaitState(t, af.Nodes[1].Name, "wait_primary", 40*time.Second, nil)
	t.Logf("node_2 promoted %v after the primary's loss", time.Since(start).Round(time.Millisecond))
}
