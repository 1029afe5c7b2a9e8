package client

import (
	"math/rand/v2"
	"time"
)

// backoff computes reconnect delays: exponential growth from min, capped at
// max, with full jitter so that many clients dropped at once (a chatd restart)
// do not come back in lockstep.
type backoff struct {
	min, max time.Duration
}

// delay returns the wait before reconnect attempt n (0-based): a uniformly
// random duration in [min, min(max, min·2ⁿ)].
func (b backoff) delay(n int) time.Duration {
	ceil := b.max
	if n < 62 {
		if d := b.min << n; d > 0 && d < b.max && d>>n == b.min {
			ceil = d
		}
	}
	if ceil <= b.min {
		return b.min
	}
	return b.min + rand.N(ceil-b.min+1)
}
