package api

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Frame costs, in units of the connection's token bucket. A token
// (rate_per_s, rate_burst) is tokenUnits units: a frame that makes the
// server do real work (store, query, verify a token) costs a whole token,
// while an ack or a ping, which only touch memory, cost one unit, so a
// client acking every message of a busy chat one by one stays well inside
// its budget. An ack costs one more unit per ackIDsPerUnit ids it carries:
// acks are applied under push's registry lock, which every delivery takes.
const (
	tokenUnits    = 8
	ackIDsPerUnit = 64
)

// ackCost is what an ack frame of n ids costs.
func ackCost(n int) int { return 1 + max(n-1, 0)/ackIDsPerUnit }

// connLimits are one connection's limits: the token bucket every client
// frame is charged to (send and the other events, read, typing, ack, auth,
// ping, and frames that are not valid), and credits (sends awaiting their
// answer).
type connLimits struct {
	bucket   *rate.Limiter // only the reader goroutine charges it
	credits  int64
	inflight atomic.Int64 // sends submitted and not yet answered; also changed by ingest workers
}

func newConnLimits(l Limits) connLimits {
	return connLimits{
		bucket:  rate.NewLimiter(rate.Limit(l.RatePerSecond*tokenUnits), l.RateBurst*tokenUnits),
		credits: int64(l.Credits),
	}
}

// allow charges units to the bucket; false (and nothing charged) when the
// bucket holds fewer.
func (l *connLimits) allow(now time.Time, units int) bool { return l.bucket.AllowN(now, units) }

func (l *connLimits) takeCredit() bool {
	if l.inflight.Add(1) > l.credits {
		l.inflight.Add(-1)
		return false
	}
	return true
}

func (l *connLimits) returnCredit() { l.inflight.Add(-1) }

// abuseStreak is the abuse rule: a client whose frames were refused max
// times in a row, all within window, is not backing off, and its
// connection closes with 4008. Refused means answered `rejected` for the
// client's own doing (any code but overloaded, which is the server's
// state), or a typing frame dropped for the budget. A frame carried out
// ends the streak, so a client that slows down when told, or that makes an
// occasional mistake, is never closed. The reader, ingest workers (answers
// to sends) and the read-state drain (answers to reads) all record into
// it, so it has a lock; the end of a streak, recorded for every accepted
// send, reads only an atomic when there is no streak.
type abuseStreak struct {
	max    int
	window time.Duration

	n     atomic.Int64 // the streak's length; written under mu
	mu    sync.Mutex
	start time.Time // guarded by mu; when the streak began
}

func newAbuseStreak(cfg *Config) abuseStreak {
	return abuseStreak{max: cfg.Abuse.Rejects, window: cfg.Abuse.Window}
}

// refused records one refused frame and reports whether the streak reached
// the abuse limit.
func (a *abuseStreak) refused(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.n.Load()
	if n == 0 || now.Sub(a.start) > a.window {
		n, a.start = 0, now
	}
	n++
	a.n.Store(n)
	return n >= int64(a.max)
}

// carriedOut ends a streak.
func (a *abuseStreak) carriedOut() {
	if a.n.Load() == 0 {
		return
	}
	a.mu.Lock()
	a.n.Store(0)
	a.mu.Unlock()
}
