package embedded_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the binary if a test leaves a goroutine behind: the
// supervisor, its log copiers and restart watchers, and the NATS server's
// goroutines must all be gone once Stop and Shutdown return.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
