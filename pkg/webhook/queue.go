package webhook

import (
	"math/rand/v2"
	"sync"
	"time"
)

// queue holds an endpoint's events by chat for its workers. A chat's
// events go out one at a time in seq order; a chat waiting out a backoff
// is parked and holds back only itself, while the workers post the other
// chats' events. It holds at most limit events: route waits for room, which
// keeps what a session holds within the consumer's MaxAckPending.
type queue struct {
	mu     sync.Mutex
	work   *sync.Cond // a chat turned ready, or the queue closed
	room   *sync.Cond // an event left, or the queue closed
	chats  map[string]*chatLine
	ready  []*chatLine // first in, first out
	timers map[*chatLine]*parked
	// revived is when reviveLocked last cut the waits short.
	revived time.Time
	size    int
	limit   int
	closed  bool
}

// parked is a chat waiting out a backoff: its timer, when it is due, and
// whether the endpoint asked for the wait (Retry-After).
type parked struct {
	t     *time.Timer
	due   time.Time
	asked bool
}

// chatLine is one chat's events in the queue, oldest first. busy: a worker
// posts its first event, or it waits out a backoff.
type chatLine struct {
	chat     string
	items    []item
	attempts int // failed posts of items[0]
	busy     bool
}

func newQueue(limit int) *queue {
	q := &queue{chats: map[string]*chatLine{}, timers: map[*chatLine]*parked{}, limit: limit}
	q.work, q.room = sync.NewCond(&q.mu), sync.NewCond(&q.mu)
	return q
}

// put adds it behind its chat's earlier events, waiting for room. It
// reports false when the queue closed first.
func (q *queue) put(it item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.size >= q.limit && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		return false
	}
	q.size++
	l := q.chats[it.chat]
	if l == nil {
		l = &chatLine{chat: it.chat}
		q.chats[it.chat] = l
	}
	l.items = append(l.items, it)
	if len(l.items) == 1 && !l.busy {
		q.makeReady(l)
	}
	return true
}

// next waits for a ready chat and hands its first event to the calling
// worker, which reports back with done or retry. It reports false when
// the queue closed.
func (q *queue) next() (*chatLine, item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && !q.closed {
		q.work.Wait()
	}
	if q.closed {
		return nil, item{}, false
	}
	l := q.ready[0]
	q.ready[0] = nil
	q.ready = q.ready[1:]
	l.busy = true
	return l, l.items[0], true
}

// done ends l's first event, delivered or set aside: its next, if any, is
// ready. A delivery also tells the parked chats the endpoint answers
// again (reviveLocked).
func (q *queue) done(l *chatLine, delivered bool, soon time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l.items[0] = item{}
	l.items = l.items[1:]
	l.attempts, l.busy = 0, false
	q.size--
	q.room.Signal()
	if len(l.items) == 0 {
		delete(q.chats, l.chat)
	} else {
		q.makeReady(l)
	}
	if delivered {
		q.reviveLocked(soon)
	}
}

// retry counts a failed post of l's first event and parks l for w; then
// it is ready again.
func (q *queue) retry(l *chatLine, w wait) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l.attempts++
	if q.closed {
		return
	}
	q.timers[l] = &parked{due: time.Now().Add(w.d), asked: w.asked, t: time.AfterFunc(w.d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.closed {
			return
		}
		delete(q.timers, l)
		l.busy = false
		q.makeReady(l)
	})}
}

// reviveLocked is told of every delivered event; q.mu is held. An
// endpoint that answers again after an outage has its parked chats
// waiting out long backoffs: those are cut to a random point within soon
// (at most once per soon), so the backlog flows again within about soon
// rather than the longest backoff. A wait the endpoint asked for with
// Retry-After is kept.
func (q *queue) reviveLocked(soon time.Duration) {
	if len(q.timers) == 0 || q.closed {
		return
	}
	now := time.Now()
	if now.Before(q.revived.Add(soon)) {
		return
	}
	q.revived = now
	for _, p := range q.timers {
		if p.asked || p.due.Sub(now) <= soon {
			continue
		}
		// A timer that already fired waits for q.mu to make its chat
		// ready: left alone.
		if p.t.Stop() {
			d := time.Duration(rand.Int64N(int64(soon))) + 1
			p.due = now.Add(d)
			p.t.Reset(d)
		}
	}
}

// makeReady queues l for a worker; q.mu is held.
func (q *queue) makeReady(l *chatLine) {
	q.ready = append(q.ready, l)
	q.work.Signal()
}

// close wakes every waiter and stops the backoff timers; what the queue
// holds stays with the session, which gives it back to the stream.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for l, p := range q.timers {
		p.t.Stop()
		delete(q.timers, l)
	}
	q.work.Broadcast()
	q.room.Broadcast()
}
