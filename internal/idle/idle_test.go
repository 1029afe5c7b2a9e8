package idle

import (
	"testing"
	"time"
)

// The deadline moves on the first frame, then only once the last move is
// timeout/16 old; wherever frames fall, it is never sooner than timeout
// after the last frame, nor later than timeout + timeout/16.
func TestDeadlineMovesLazilyAndNeverEarly(t *testing.T) {
	const timeout = 1600 * time.Millisecond // slack 100 ms
	t0 := time.Unix(1000, 0)
	var d Deadline
	var deadline time.Time
	moves := 0
	for ms := 0; ms <= 1000; ms += 30 { // a frame every 30 ms
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		if next, ok := d.Next(now, timeout); ok {
			deadline = next
			moves++
		}
		if deadline.Before(now.Add(timeout)) {
			t.Fatalf("frame at %d ms: deadline %v after it, want at least %v", ms, deadline.Sub(now), timeout)
		}
		if deadline.After(now.Add(timeout + timeout/SlackDivisor)) {
			t.Fatalf("frame at %d ms: deadline %v after it, want at most %v", ms, deadline.Sub(now), timeout+timeout/SlackDivisor)
		}
	}
	// 34 frames, a move at most every 100 ms (every 4th frame): 9 moves.
	if moves != 9 {
		t.Fatalf("deadline moved %d times for 34 frames 30 ms apart, want 9", moves)
	}
}
