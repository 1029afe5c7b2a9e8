package ingest

import (
	"math"
	"sync/atomic"
)

// fullAlarm lets Submit wake the dispatcher while it gathers a batch, but
// only once the queue holds enough sends to fill that batch. Without it the
// dispatcher woke for every send, a goroutine that had nothing to do but
// append the send and go back to waiting out the gather window, each wake a
// trip through the scheduler on a box of few cores (docs/benchmarks-log.md,
// "The dispatcher's wake-ups, and one Go processor
// (2026-12-03, 08:15–09:20 UTC)"). Now a window's sends wait in the channel
// and the dispatcher takes them all when the window ends or the batch is
// full.
//
// The alarm is a hint, never needed for correctness: a missed or stale ring
// costs at most a batch closed at its window's end, as without a size limit.
type fullAlarm struct {
	// room is how many queued sends would fill the batch being gathered;
	// math.MaxInt64 when the dispatcher is not gathering one.
	room atomic.Int64
	ring chan struct{}
}

func newFullAlarm() *fullAlarm {
	a := &fullAlarm{ring: make(chan struct{}, 1)}
	a.room.Store(math.MaxInt64)
	return a
}

// queued is called by Submit after queueing, with the queue's length.
func (a *fullAlarm) queued(n int) {
	if int64(n) >= a.room.Load() {
		select {
		case a.ring <- struct{}{}:
		default: // already ringing
		}
	}
}

// arm sets the room left in the batch being gathered; disarm clears it.
func (a *fullAlarm) arm(room int) { a.room.Store(int64(room)) }
func (a *fullAlarm) disarm()      { a.room.Store(math.MaxInt64) }
