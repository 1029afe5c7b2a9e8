package api

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// ReadyCheckTTL is how long one readiness check answers /readyz: a
// dependency that fails shows as not ready at most this long after.
const ReadyCheckTTL = time.Second

// healthz is liveness: the process serves HTTP.
func (s *Server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz is readiness: the dependencies Config.Ready checks are reachable
// and the server is not shutting down (see Unready). The dependencies are
// checked through s.ready, at most once per ReadyCheckTTL; shutting down
// shows at once.
func (s *Server) readyz(c *fiber.Ctx) error {
	if s.unready.Load() || s.gw.closing() {
		return writeError(c, fiber.StatusServiceUnavailable, wire.CodeUnavailable, "shutting down")
	}
	if s.cfg.Ready != nil {
		if err := s.ready.check(c.UserContext()); err != nil {
			return writeError(c, fiber.StatusServiceUnavailable, wire.CodeUnavailable, "not ready")
		}
	}
	body := readyBody{Status: "ready"}
	if s.cfg.Postgres != nil {
		pg := s.cfg.Postgres()
		body.Postgres = &pg
	}
	return c.JSON(body)
}

// readyBody is /readyz's answer when ready.
type readyBody struct {
	Status   string         `json:"status"`
	Postgres *PostgresState `json:"postgres,omitempty"`
}

// PostgresState is what /readyz says about PostgreSQL, so that a probe
// shows a failover (docs/operations.md, "PostgreSQL failover").
type PostgresState struct {
	// Timeline is the WAL timeline of the primary the node writes to; it
	// rises by one with each failover. Zero: not connected yet.
	Timeline int64 `json:"timeline"`
	// LastFailover is the last failover the node followed since it
	// started; nil when none.
	LastFailover *PostgresFailover `json:"last_failover,omitempty"`
}

// PostgresFailover is one change of timeline the node followed.
type PostgresFailover struct {
	FromTimeline int64     `json:"from_timeline"`
	ToTimeline   int64     `json:"to_timeline"`
	At           time.Time `json:"at"` // when the node first connected to the new primary
}

// readyCache runs a readiness check for many callers: a result younger than
// ttl (by now) answers them all, and callers that come while a check runs
// wait for that one. /readyz is public behind the compose proxy, and each
// check costs a PostgreSQL ping, a schema query and a JetStream round trip,
// so a flood of probes must not turn into a flood of checks. Safe for
// concurrent use.
type readyCache struct {
	fn      func(context.Context) error
	ttl     time.Duration
	timeout time.Duration // bounds one check, whoever is waiting
	now     func() time.Time
	log     *slog.Logger

	mu     sync.Mutex
	at     time.Time    // when the cached result's check started; zero: none yet
	err    error        // the cached result
	flight *readyFlight // the check running now; nil when none
}

// readyFlight is one check in progress; err is set before done closes.
type readyFlight struct {
	done chan struct{}
	err  error
}

func newReadyCache(fn func(context.Context) error, ttl, timeout time.Duration, now func() time.Time, log *slog.Logger) *readyCache {
	return &readyCache{fn: fn, ttl: ttl, timeout: timeout, now: now, log: log}
}

// check returns the cached result while it is fresh; else it joins the
// check in flight, or runs one itself in the caller's goroutine. ctx bounds
// only the caller's wait: the check runs detached from it, so one caller
// that goes away does not fail the others waiting on the same check.
func (r *readyCache) check(ctx context.Context) error {
	r.mu.Lock()
	start := r.now()
	if !r.at.IsZero() && start.Sub(r.at) < r.ttl {
		err := r.err
		r.mu.Unlock()
		return err
	}
	if f := r.flight; f != nil {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &readyFlight{done: make(chan struct{})}
	r.flight = f
	r.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	f.err = r.fn(cctx)
	cancel()
	if f.err != nil {
		// The consumer not live yet is every start (and push warns itself
		// when a live one is lost): not worth a WARN per check.
		level := slog.LevelWarn
		if errors.Is(f.err, push.ErrNotConsuming) {
			level = slog.LevelDebug
		}
		r.log.Log(ctx, level, "not ready", "err", f.err)
	}
	r.mu.Lock()
	// Stamped with the check's start: a result is never taken for newer
	// than what it saw.
	r.at, r.err, r.flight = start, f.err, nil
	r.mu.Unlock()
	close(f.done)
	return f.err
}
