package signal

import (
	"testing"

	"github.com/chatd/chatd/internal/testpg"
)

// TestMain starts the test binary's PostgreSQL (last_seen's store) and,
// once the tests are done, fails the binary if goroutines leaked.
func TestMain(m *testing.M) { testpg.Main(m) }
