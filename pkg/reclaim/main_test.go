package reclaim_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
