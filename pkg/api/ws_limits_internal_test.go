package api

import (
	"testing"
	"time"
)

// The abuse streak closes at max refusals in a row within the window; a
// frame carried out, or a refusal after the window, starts it over.
func TestAbuseStreak(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	a := newAbuseStreak(&Config{Abuse: AbuseLimits{Rejects: 3, Window: 10 * time.Second}})
	steps := []struct {
		name    string
		at      time.Duration
		carried bool // a frame carried out instead of a refusal
		want    bool
	}{
		{"first refusal", 0, false, false},
		{"second refusal", time.Second, false, false},
		{"a frame carried out ends the streak", 2 * time.Second, true, false},
		{"first again", 3 * time.Second, false, false},
		{"second again", 4 * time.Second, false, false},
		{"third in a row within the window", 5 * time.Second, false, true},
	}
	for _, tt := range steps {
		if tt.carried {
			a.carriedOut()
			continue
		}
		if got := a.refused(t0.Add(tt.at)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}

	b := newAbuseStreak(&Config{Abuse: AbuseLimits{Rejects: 3, Window: 10 * time.Second}})
	b.refused(t0)
	b.refused(t0.Add(time.Second))
	if b.refused(t0.Add(11 * time.Second)) {
		t.Error("a refusal after the window closed: got true, want a new streak")
	}
}

func TestAckCost(t *testing.T) {
	tests := []struct {
		ids, want int
	}{
		{1, 1}, {ackIDsPerUnit, 1}, {ackIDsPerUnit + 1, 2}, {1000, 16},
	}
	for _, tt := range tests {
		if got := ackCost(tt.ids); got != tt.want {
			t.Errorf("ackCost(%d): got %d, want %d", tt.ids, got, tt.want)
		}
	}
}
