package testwait_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	testwait.For(t, 5*time.Second, "three checks", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("checked %d times, want 3", got)
	}
}
