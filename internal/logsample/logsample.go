// Package logsample keeps a repeating error from flooding the log: the
// first occurrence of a message is logged as usual, its repeats within an
// interval are counted, and the count is logged once per interval. Before
// it, even a short PostgreSQL outage wrote one identical WARN line per
// failed batch; now it writes two.
package logsample

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultInterval is the summary period when Config.Interval is zero.
const DefaultInterval = 5 * time.Second

// Config configures a Sampler. The zero value is usable.
type Config struct {
	// Interval is how long repeats of a message are counted before the count
	// is logged. Zero means DefaultInterval.
	Interval time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Sampler logs through an slog.Logger, sampling by message. Keys are the
// message strings, so call it with constant messages and put what varies
// in the attributes (the summary line carries the attributes of the latest
// repeat). It holds one entry per distinct message, which is bounded by
// the call sites. A Sampler is safe for concurrent use; it starts no
// goroutine: summaries are written by the next call after an interval, and
// by Flush, which the owner calls when the trouble is over and on shutdown.
type Sampler struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	byMsg map[string]*window
	order []*window // first-seen order, so Flush writes a stable sequence
}

// window is one message's current sampling interval.
type window struct {
	msg        string
	level      slog.Level
	start      time.Time // when the line that opened the window was logged
	suppressed int
	args       []any // of the latest suppressed repeat
}

// New returns a Sampler that writes to log.
func New(log *slog.Logger, cfg Config) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sampler{log: log, interval: cfg.Interval, now: cfg.Now, byMsg: make(map[string]*window)}
}

// Warn logs msg at Warn level, sampled.
func (s *Sampler) Warn(msg string, args ...any) { s.Log(slog.LevelWarn, msg, args...) }

// Error logs msg at Error level, sampled.
func (s *Sampler) Error(msg string, args ...any) { s.Log(slog.LevelError, msg, args...) }

// Log logs msg at level unless the same message was logged less than an
// interval ago; then it only counts it. The first call after the interval
// logs with repeated=N window=<interval> when N repeats were suppressed,
// and opens a new interval.
func (s *Sampler) Log(level slog.Level, msg string, args ...any) {
	now := s.now()
	s.mu.Lock()
	w, ok := s.byMsg[msg]
	if !ok {
		w = &window{msg: msg}
		s.byMsg[msg] = w
		s.order = append(s.order, w)
	}
	if ok && now.Sub(w.start) < s.interval {
		w.suppressed++
		w.level, w.args = level, args
		s.mu.Unlock()
		return
	}
	repeated := w.suppressed
	w.start, w.suppressed, w.level, w.args = now, 0, level, nil
	s.mu.Unlock()
	if repeated > 0 {
		args = append(args[:len(args):len(args)], "repeated", repeated, "window", s.interval)
	}
	s.log.Log(context.Background(), level, msg, args...)
}

// Flush logs the count of every message with suppressed repeats now (with
// the attributes of its latest repeat) and starts each afresh, so the next
// occurrence is logged at once. Call it when the failure has cleared and
// before the owner stops, so no count is lost.
func (s *Sampler) Flush() {
	type line struct {
		level    slog.Level
		msg      string
		args     []any
		repeated int
	}
	var out []line
	s.mu.Lock()
	for _, w := range s.order {
		if w.suppressed > 0 {
			out = append(out, line{w.level, w.msg, w.args, w.suppressed})
		}
		w.start, w.suppressed, w.args = time.Time{}, 0, nil
	}
	s.mu.Unlock()
	for _, l := range out {
		args := append(l.args[:len(l.args):len(l.args)], "repeated", l.repeated, "window", s.interval)
		s.log.Log(context.Background(), l.level, l.msg, args...)
	}
}
