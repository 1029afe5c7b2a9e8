package api

import "sync"

// outQueue is a connection's bounded queue of frames for its writer, and
// the token that lets exactly one writer goroutine run at a time. The
// writer runs only while there is something to write: an idle connection
// costs neither a goroutine nor a preallocated buffer (with 10,000
// connections a buffered channel and a parked writer cost ~14 KiB each).
// Safe for concurrent use.
type outQueue struct {
	limit int
	// reserved is the part of limit only answers may take: messages and
	// signals stop short of it, so a burst of them cannot make an
	// `accepted` find the queue full and close a client that reads.
	reserved int
	// writers counts running writers. A writer is counted under mu in the
	// same step that hands it the role, so once the queue is closed no
	// writer can appear that Wait would miss (a frame pushed just before
	// close could otherwise start its writer after the session's Wait).
	writers sync.WaitGroup

	mu     sync.Mutex
	items  []outFrame
	busy   bool // the writer role is taken: a writer runs, or hello is not written yet
	closed bool // the session chose its close code: no new frames
	// room wakes a reader in waitRoom when the writer takes frames or the
	// queue closes; nil until a reader first waits.
	room *sync.Cond
}

// keepCap is the largest drained slice the writer hands back for reuse;
// a bigger one (after a burst) is dropped so an idle connection shrinks.
const keepCap = 16

// newOutQueue returns a queue of limit frames, reserved of them for answers,
// whose writer role is held by the caller until release: nothing may be
// written before `hello`.
func newOutQueue(limit, reserved int) *outQueue {
	return &outQueue{limit: limit, reserved: reserved, busy: true}
}

// push queues f. ok is false when the queue is closed or full for f (frames
// the writer has taken no longer count; only an answer may take the
// reserved part); start is true when the caller must start a writer
// (already counted in writers), which then owns the role.
func (q *outQueue) push(f outFrame) (ok, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	room := q.limit
	if !f.answer {
		room -= q.reserved
	}
	if q.closed || len(q.items) >= room {
		return false, false
	}
	q.items = append(q.items, f)
	return true, q.claimLocked()
}

// close refuses frames from now on and reports whether the caller must
// start a writer to send the close frame.
func (q *outQueue) close() (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.wakeLocked()
	return q.claimLocked()
}

// waitRoom blocks while below or more frames are queued and the queue is
// open. The session's reader calls it before it reads the next frame, so a
// client that sends frames faster than their answers are written is held
// back by TCP instead of filling the queue and being closed as if it did not
// read. A writer is running whenever frames are queued, and it wakes the
// reader when it takes them; one that cannot write closes the queue.
func (q *outQueue) waitRoom(below int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) >= below && !q.closed {
		if q.room == nil {
			q.room = sync.NewCond(&q.mu)
		}
		q.room.Wait()
	}
}

func (q *outQueue) wakeLocked() {
	if q.room != nil {
		q.room.Broadcast()
	}
}

func (q *outQueue) claimLocked() bool {
	if q.busy {
		return false
	}
	q.busy = true
	q.writers.Add(1)
	return true
}

// release gives the writer role up, or reports that the caller must keep it
// and start a writer because frames are waiting or the queue is closed.
func (q *outQueue) release() (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 || q.closed {
		q.writers.Add(1) // the writer the caller now starts
		return true
	}
	q.busy = false
	return false
}

// finish gives the writer role up, unless frames are queued or the queue is
// closed: then it reports false and the caller keeps the role for a writer
// goroutine. Only the role's holder calls it.
func (q *outQueue) finish() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 || q.closed {
		return false
	}
	q.busy = false
	return true
}

// next is the writer's loop step: it returns the queued frames (reusing
// spare) with more true; with nothing queued it releases the role and
// returns more false, unless the queue is closed (then the writer keeps the
// role, to write the close frame). Only the role's holder calls it.
func (q *outQueue) next(spare []outFrame) (batch []outFrame, more bool) {
	clear(spare)
	if cap(spare) > keepCap {
		spare = nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		if q.closed {
			return spare[:0], true
		}
		q.busy = false
		return spare[:0], false
	}
	batch = q.items
	q.items = spare[:0]
	q.wakeLocked()
	return batch, true
}

// drain takes whatever is queued, for the closing writer's final flush.
func (q *outQueue) drain() []outFrame {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.items
	q.items = nil
	return batch
}
