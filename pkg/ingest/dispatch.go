package ingest

import (
	"context"
	"time"
)

// dispatcher forms the group-commit batches from the one inbound queue and
// hands each to an idle committer, so that no two batches committing at
// once have a chat in common.
//
// Why one dispatcher rather than workers taking from the queue themselves:
// a batch locks its chats' rows until COMMIT (seq allocation), so two
// concurrent batches with a chat in common run one after the other inside
// PostgreSQL. Under load with a few hundred chats almost every pair of
// batches shared a chat, and PostgreSQL spent more time in those lock waits
// than in all the inserts. Fixed chat-to-worker shards avoided the waits
// but made every worker gather only its share of the traffic: batches were
// smaller, PostgreSQL spent more CPU per message, and a send waited for its
// own shard's commit while the other workers idled (docs/benchmarks-log.md,
// "PostgreSQL's lock waits, rewrites of target rows,
// the relay, idle memory (2026-12-01)"). The dispatcher keeps both: any
// idle committer takes the oldest ready sends, and a chat whose batch is
// still committing waits here, in order, instead of in a row lock.
//
// It is also why a chat's sends commit in the order they were submitted:
// they leave its FIFO in order and only one batch holds the chat at a time.
//
// A single goroutine (run) owns all its state.
type dispatcher struct {
	queue <-chan item
	alarm *fullAlarm // rung by Submit when the queue would fill the batch being gathered
	max   int
	delay time.Duration
	// gathered is how many eligible sends the open window holds, when
	// dispatch last returned a wait.
	gathered int

	// flights are the idle committers' batches; run sends one to a
	// committer and gets it back on done once it committed.
	idle    []*flight
	work    chan<- *flight
	done    <-chan *flight
	running int // flights out with committers

	chats    map[string]*chatQueue // chats with sends waiting
	order    []*chatQueue          // the same, oldest waiting send first
	waiting  int                   // sends in chats
	inFlight map[string]bool       // chats of the batches out with committers
}

// chatQueue is one chat's waiting sends, in submission order.
type chatQueue struct {
	chat  string
	items []item
}

// flight is one batch on its way through a committer.
type flight struct {
	items []item
	chats []string // distinct chats of items: released when it comes back
}

func newDispatcher(queue <-chan item, alarm *fullAlarm, max int, delay time.Duration, committers int, work chan<- *flight, done <-chan *flight) *dispatcher {
	d := &dispatcher{
		queue: queue, alarm: alarm, max: max, delay: delay, work: work, done: done,
		chats:    make(map[string]*chatQueue),
		inFlight: make(map[string]bool),
	}
	for i := 0; i < committers; i++ {
		d.idle = append(d.idle, &flight{items: make([]item, 0, max)})
	}
	return d
}

// run dispatches until ctx ends and then until stopped is closed (after
// which nothing new is queued): it takes what is left in the queue,
// dispatches all of it without waiting for fuller batches, waits for the
// committers to finish, and closes work so they exit.
func (d *dispatcher) run(ctx context.Context, stopped <-chan struct{}) {
	defer close(d.work)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for ctx.Err() == nil {
		wait := d.dispatch(time.Now(), false)
		if wait <= 0 {
			// Nothing is being gathered: the next send may start a window
			// (or, with every committer busy, join the queue for one).
			select {
			case it := <-d.queue:
				d.add(it)
				d.takeQueued()
			case f := <-d.done:
				d.release(f)
			case <-ctx.Done():
			}
			continue
		}
		// A window is open: its sends wait in the channel until it ends,
		// a committer comes back, or the queue alone would fill the batch.
		room := d.max - d.gathered
		d.alarm.arm(room)
		if len(d.queue) < room {
			timer.Reset(wait)
			select {
			case <-d.alarm.ring:
			case f := <-d.done:
				d.release(f)
			case <-timer.C:
			case <-ctx.Done():
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		d.alarm.disarm()
		d.takeQueued()
	}
	<-stopped
	d.takeQueued()
	for d.waiting > 0 || d.running > 0 {
		d.dispatch(time.Now(), true)
		if d.running == 0 {
			continue // every committer idle: dispatch again (a chat held by nobody)
		}
		d.release(<-d.done)
	}
}

// takeQueued moves every send already in the queue to the chats' FIFOs,
// without blocking, so a burst is looked at once.
func (d *dispatcher) takeQueued() {
	for {
		select {
		case it := <-d.queue:
			d.add(it)
		default:
			return
		}
	}
}

func (d *dispatcher) add(it item) {
	q := d.chats[it.req.Chat]
	if q == nil {
		q = &chatQueue{chat: it.req.Chat}
		d.chats[it.req.Chat] = q
		d.order = append(d.order, q)
	}
	q.items = append(q.items, it)
	d.waiting++
}

// release frees a returned flight's chats and its committer.
func (d *dispatcher) release(f *flight) {
	for _, c := range f.chats {
		delete(d.inFlight, c)
	}
	clear(f.items)
	f.items, f.chats = f.items[:0], f.chats[:0]
	d.idle = append(d.idle, f)
	d.running--
}

// dispatch hands batches to idle committers while a batch is ready: it
// holds max sends of chats not in flight, or its oldest send has waited
// the gather delay (always, when flush is set). Otherwise it returns how
// long until the oldest eligible send's delay runs out (0: nothing to
// wait for, or no idle committer), and records in gathered how many
// eligible sends that window holds (run arms the alarm with the rest).
func (d *dispatcher) dispatch(now time.Time, flush bool) time.Duration {
	for len(d.idle) > 0 {
		oldest, eligible := d.eligible()
		if eligible == 0 {
			return 0
		}
		if left := d.delay - now.Sub(oldest); !flush && eligible < d.max && left > 0 {
			d.gathered = eligible
			return left
		}
		f := d.idle[len(d.idle)-1]
		d.idle = d.idle[:len(d.idle)-1]
		d.fill(f)
		d.running++
		d.work <- f
	}
	return 0
}

// eligible reports the queue time of the oldest waiting send whose chat is
// not in flight, and how many such sends there are (counted up to max:
// beyond that the batch is full anyway).
func (d *dispatcher) eligible() (oldest time.Time, n int) {
	for _, q := range d.order {
		if d.inFlight[q.chat] {
			continue
		}
		if n == 0 {
			oldest = q.items[0].queued
		}
		n += len(q.items)
		if n >= d.max {
			break
		}
	}
	return oldest, n
}

// fill moves up to max sends into f, oldest chat first and each chat's
// sends in order, and marks their chats in flight. Chats left with nothing
// waiting leave the order; the rest keep their places.
func (d *dispatcher) fill(f *flight) {
	kept := d.order[:0]
	for _, q := range d.order {
		room := d.max - len(f.items)
		if room == 0 || d.inFlight[q.chat] {
			kept = append(kept, q)
			continue
		}
		take := min(room, len(q.items))
		f.items = append(f.items, q.items[:take]...)
		f.chats = append(f.chats, q.chat)
		d.waiting -= take
		clear(q.items[:take])
		q.items = q.items[take:]
		if len(q.items) > 0 {
			kept = append(kept, q)
			continue
		}
		delete(d.chats, q.chat)
	}
	clear(d.order[len(kept):])
	d.order = kept
	for _, c := range f.chats {
		d.inFlight[c] = true
	}
}
