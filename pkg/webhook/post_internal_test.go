package webhook

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The wait after a failure doubles from MinBackoff to MaxBackoff, lies in
// the upper half of its step, and gives way to a longer Retry-After, up
// to MaxRetryAfter.
func TestBackoff(t *testing.T) {
	h := &hook{cfg: &Config{MinBackoff: time.Second, MaxBackoff: time.Minute, MaxRetryAfter: 10 * time.Minute}}
	for _, tc := range []struct {
		name       string
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{"first", 1, 0, 500 * time.Millisecond, time.Second},
		{"third", 3, 0, 2 * time.Second, 4 * time.Second},
		{"capped", 12, 0, 30 * time.Second, time.Minute},
		{"huge attempt", 200, 0, 30 * time.Second, time.Minute},
		{"retry-after longer", 1, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"retry-after shorter", 3, time.Millisecond, 2 * time.Second, 4 * time.Second},
		{"retry-after over the cap", 1, time.Hour, 10 * time.Minute, 10 * time.Minute},
	} {
		for range 50 {
			if got := h.backoff(tc.attempt, tc.retryAfter); got < tc.lo || got > tc.hi {
				t.Fatalf("%s: got %v, want within [%v, %v]", tc.name, got, tc.lo, tc.hi)
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, v string
		want    time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "120", 2 * time.Minute},
		{"date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"past date", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
		{"negative", "-5", 0},
	} {
		if got := parseRetryAfter(tc.v, now); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The signature is the specification's example computed independently:
// HMAC-SHA256 keyed by the decoded secret over "id.timestamp.body".
func TestSignMatchesTheSpecification(t *testing.T) {
	key, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	const id, ts, want = "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	body := []byte(`{"test": 2432232314}`)
	if got := Sign(key, id, ts, body); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// An endpoint's Signer reuses its HMAC state: signed again, between
	// other events and from several workers at once, it still gives the
	// specification's value.
	s := NewSigner(key)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				s.AppendSignature(nil, fmt.Sprint("msg_", w, i), ts+int64(i), []byte(`{"other": true}`))
				if got := string(s.AppendSignature([]byte("x"), id, ts, body)); got != "x"+want {
					t.Errorf("worker %d, round %d: got %s, want x%s", w, i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
