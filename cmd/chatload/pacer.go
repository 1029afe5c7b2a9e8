package main

import (
	"context"
	"time"
)

// pacer calls fire for the i-th send at start + i/rate, so the load is an
// even stream rather than bursts on a coarse ticker: each tick fires exactly
// the sends that have come due since the last one. A tick that comes late
// (GC pause, scheduler) fires the sends it owes at once; a backlog longer
// than maxCatchUp is dropped instead, so a stalled generator does not
// follow the stall with an unbounded burst.
type pacer struct {
	rate float64
	tick time.Duration
}

// maxCatchUp bounds how far behind schedule the pacer will catch up.
const maxCatchUp = 100 * time.Millisecond

func newPacer(rate float64) *pacer {
	tick := time.Duration(float64(time.Second) / max(rate, 1))
	return &pacer{rate: rate, tick: min(max(tick, time.Millisecond), 10*time.Millisecond)}
}

// run fires until ctx ends and returns the number of sends fired and the
// number dropped as unrecoverable backlog.
func (p *pacer) run(ctx context.Context, fire func(i int64)) (fired, dropped int64) {
	if p.rate <= 0 {
		<-ctx.Done()
		return 0, 0
	}
	start := time.Now()
	t := time.NewTicker(p.tick)
	defer t.Stop()
	var next int64 // index of the next send to fire
	for {
		select {
		case <-ctx.Done():
			return fired, dropped
		case now := <-t.C:
			due := int64(now.Sub(start).Seconds() * p.rate)
			if behind := due - next; behind > int64(p.rate*maxCatchUp.Seconds())+1 {
				skip := behind - int64(p.rate*maxCatchUp.Seconds())
				next += skip
				dropped += skip
			}
			for ; next < due; next++ {
				fire(next)
				fired++
			}
		}
	}
}
