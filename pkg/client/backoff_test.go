package client_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/client"
)

func TestBackoffBounds(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 10 * time.Second
	tests := []struct {
		attempt int
		ceil    time.Duration
	}{
		{0, lo}, {1, 200 * time.Millisecond}, {3, 800 * time.Millisecond},
		{6, 6400 * time.Millisecond}, {7, hi}, {40, hi}, {200, hi},
	}
	for _, tt := range tests {
		var top time.Duration
		for range 2000 {
			d := client.BackoffDelay(lo, hi, tt.attempt)
			if d < lo || d > tt.ceil {
				t.Fatalf("attempt %d: got %v, want within [%v, %v]", tt.attempt, d, lo, tt.ceil)
			}
			top = max(top, d)
		}
		// Jitter must use the range, not sit at the floor.
		if tt.ceil > lo && top < lo+(tt.ceil-lo)/2 {
			t.Fatalf("attempt %d: max of 2000 draws %v, want above the middle of [%v, %v]", tt.attempt, top, lo, tt.ceil)
		}
	}
}
