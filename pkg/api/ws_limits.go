package api

import (
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// sendLimits are one connection's limits on `send` and `read` frames: a
// token bucket (rate_per_s, rate_burst), credits (sends awaiting their
// answer) and the abuse rule. A client that gets AbuseRejects rate_limited
// rejections in a row, all within AbuseWindow, is not backing off: the
// connection closes with 4008. One frame that passes the limits resets the
// streak, so a client that slows down when told is never closed.
type sendLimits struct {
	bucket   *rate.Limiter
	credits  int64
	inflight atomic.Int64 // sends submitted and not yet answered; also changed by ingest workers

	// Only the reader goroutine touches the streak.
	abuseMax    int
	abuseWindow time.Duration
	streak      int
	streakStart time.Time
}

func newSendLimits(cfg *Config) sendLimits {
	return sendLimits{
		bucket:      rate.NewLimiter(rate.Limit(cfg.Limits.RatePerSecond), cfg.Limits.RateBurst),
		credits:     int64(cfg.Limits.Credits),
		abuseMax:    cfg.AbuseRejects,
		abuseWindow: cfg.AbuseWindow,
	}
}

func (l *sendLimits) allow(now time.Time) bool { return l.bucket.AllowN(now, 1) }

func (l *sendLimits) takeCredit() bool {
	if l.inflight.Add(1) > l.credits {
		l.inflight.Add(-1)
		return false
	}
	return true
}

func (l *sendLimits) returnCredit() { l.inflight.Add(-1) }

// passed ends a streak of limited frames.
func (l *sendLimits) passed() { l.streak = 0 }

// abusive records one limited frame and reports whether the streak reached
// the abuse limit.
func (l *sendLimits) abusive(now time.Time) bool {
	if l.streak == 0 || now.Sub(l.streakStart) > l.abuseWindow {
		l.streak, l.streakStart = 0, now
	}
	l.streak++
	return l.streak >= l.abuseMax
}
