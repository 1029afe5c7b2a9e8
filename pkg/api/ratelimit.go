package api

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// userLimiter is a token bucket per user for REST calls. Buckets of users
// who have been idle long enough to refill are dropped when the map grows,
// so memory follows the active users, without a sweeper goroutine. Safe for
// concurrent use.
type userLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	sweepAt int // map size that triggers the next sweep
}

const minSweepAt = 1024

func newUserLimiter(perSecond, burst int, now func() time.Time) *userLimiter {
	return &userLimiter{
		limit:   rate.Limit(perSecond),
		burst:   burst,
		now:     now,
		buckets: make(map[string]*rate.Limiter),
		sweepAt: minSweepAt,
	}
}

// allow takes one token for user. When none is left it returns false and how
// long until one is.
func (u *userLimiter) allow(user string) (bool, time.Duration) {
	now := u.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	l, ok := u.buckets[user]
	if !ok {
		if len(u.buckets) >= u.sweepAt {
			u.sweepLocked(now)
		}
		l = rate.NewLimiter(u.limit, u.burst)
		u.buckets[user] = l
	}
	if l.AllowN(now, 1) {
		return true, 0
	}
	r := l.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}

// sweepLocked drops full buckets (a new bucket starts full, so dropping one
// changes nothing for its user) and resizes the trigger to twice what is left.
func (u *userLimiter) sweepLocked(now time.Time) {
	full := float64(u.burst)
	for user, l := range u.buckets {
		if l.TokensAt(now) >= full {
			delete(u.buckets, user)
		}
	}
	u.sweepAt = max(minSweepAt, 2*len(u.buckets))
}

// retryAfterSeconds rounds a wait up to whole seconds, at least 1, for the
// Retry-After header.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
