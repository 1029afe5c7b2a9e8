package push_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine push starts has an owner that stops it: after all tests
// (registries stopped, servers shut down) none may be left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
