// Package idle moves a connection's read deadline lazily. Moving a socket's
// deadline is a timer update in the Go runtime, and done on every frame it
// was a visible share of chatd's CPU with many connections acking every
// delivery (docs/benchmarks-log.md, "Why group sends
// waited a second, and chatload's share of the box (2026-12-01)"); the
// server's sessions and the Go SDK's both read through it, so both sides
// keep the same rule (docs/protocol.md).
package idle

import "time"

// SlackDivisor: a connection may outlive its idle timeout by 1/SlackDivisor
// of it.
const SlackDivisor = 16

// Deadline decides when a read deadline of timeout must move. The zero
// value moves it at the first frame. Not safe for concurrent use.
type Deadline struct {
	moved time.Time // when the deadline last moved
}

// Next reports the new deadline to set at now, and false when the last
// move is less than timeout/SlackDivisor old, so the deadline stands. A
// moved deadline is timeout plus that slack from now: a connection is
// never cut before timeout of silence, and at most the slack after it.
func (d *Deadline) Next(now time.Time, timeout time.Duration) (time.Time, bool) {
	slack := timeout / SlackDivisor
	if !d.moved.IsZero() && now.Sub(d.moved) < slack {
		return time.Time{}, false
	}
	d.moved = now
	return now.Add(timeout + slack), true
}
