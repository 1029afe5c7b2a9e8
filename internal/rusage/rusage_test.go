package rusage_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/internal/rusage"
)

// Spinning for a while shows up as CPU time, and the count never goes back.
func TestSelfCPUSecondsCountsWork(t *testing.T) {
	start := rusage.SelfCPUSeconds()
	x := 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	got := rusage.SelfCPUSeconds() - start
	if got < 0.02 {
		t.Fatalf("50 ms of spinning (%d loops) counted %.3f s of CPU, want at least 0.02", x, got)
	}
}
