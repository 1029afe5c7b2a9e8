package api

import "sync"

// outQueue is a connection's bounded queue of frames for its writer. Unlike
// a buffered channel it holds memory only for what is queued, so an idle
// connection costs a few words instead of a preallocated buffer (with
// 10,000 connections that was 60 MB of heap); it still refuses frames
// beyond its limit (frames the writer has taken and is writing no longer
// count). Safe for concurrent use; one writer takes.
type outQueue struct {
	limit int
	ready chan struct{} // 1-buffered: frames are waiting

	mu    sync.Mutex
	items []outFrame
}

// keepCap is the largest drained slice the writer hands back for reuse;
// a bigger one (after a burst) is dropped so an idle connection shrinks.
const keepCap = 16

func newOutQueue(limit int) *outQueue {
	return &outQueue{limit: limit, ready: make(chan struct{}, 1)}
}

// push queues f and reports whether there was room.
func (q *outQueue) push(f outFrame) bool {
	q.mu.Lock()
	if len(q.items) >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns everything queued, oldest first, giving spare
// (a slice an earlier take returned, now written) back for reuse.
func (q *outQueue) take(spare []outFrame) []outFrame {
	clear(spare)
	if cap(spare) > keepCap {
		spare = nil
	}
	q.mu.Lock()
	out := q.items
	q.items = spare[:0]
	q.mu.Unlock()
	return out
}
