package webhook

import (
	"testing"
	"time"
)

// A chat's events come out one at a time in order; a parked chat is
// passed over until its wait ends; put waits for room at the limit; close
// releases every waiter.
func TestQueue(t *testing.T) {
	q := newQueue(3)
	for _, it := range []item{{seq: 1, chat: "a"}, {seq: 2, chat: "a"}, {seq: 3, chat: "b"}} {
		if !q.put(it) {
			t.Fatal("put refused before close")
		}
	}
	la, it, _ := q.next()
	if it.seq != 1 {
		t.Fatalf("first: got seq %d, want 1", it.seq)
	}
	q.retry(la, wait{d: 50 * time.Millisecond})
	if _, it, _ = q.next(); it.seq != 3 {
		t.Fatalf("while a is parked: got seq %d, want b's 3", it.seq)
	}
	put := make(chan bool)
	go func() { put <- q.put(item{seq: 4, chat: "c"}) }()
	select {
	case <-put:
		t.Fatal("put did not wait at the limit")
	case <-time.After(20 * time.Millisecond):
	}
	l, it, _ := q.next() // a again, after its wait: the same first event
	if l != la || it.seq != 1 {
		t.Fatalf("after the wait: got seq %d, want a's 1 again", it.seq)
	}
	q.done(l, false, 0)
	if !<-put {
		t.Fatal("put refused after room freed up")
	}
	got := []uint64{}
	for range 2 {
		l, it, _ := q.next()
		got = append(got, it.seq)
		q.done(l, false, 0)
	}
	if got[0] != 2 || got[1] != 4 {
		t.Fatalf("then: got %v, want [2 4]", got)
	}
	done := make(chan bool)
	go func() { _, _, ok := q.next(); done <- ok }()
	q.close()
	if <-done {
		t.Fatal("next handed out an event after close")
	}
	if q.put(item{seq: 5, chat: "d"}) {
		t.Fatal("put accepted after close")
	}
}

// Once the endpoint answers again, chats parked for a long backoff retry
// within soon; one whose wait the endpoint asked for keeps it.
func TestQueueAnsweredCutsLongWaits(t *testing.T) {
	q := newQueue(10)
	defer q.close()
	q.put(item{seq: 1, chat: "long"})
	q.put(item{seq: 2, chat: "asked"})
	q.put(item{seq: 3, chat: "fine"})
	for _, w := range []wait{{d: time.Hour}, {d: time.Hour, asked: true}} {
		l, _, _ := q.next()
		q.retry(l, w)
	}
	l, _, _ := q.next()
	q.done(l, true, 50*time.Millisecond) // "fine" delivered: the endpoint answers
	got := make(chan uint64)
	go func() {
		_, it, ok := q.next()
		if ok {
			got <- it.seq
		}
	}()
	select {
	case seq := <-got:
		if seq != 1 {
			t.Fatalf("got seq %d, want the long wait's 1", seq)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long wait was not cut short")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.timers) != 1 || len(q.ready) != 0 {
		t.Fatalf("the asked-for wait: got %d parked, %d ready; want 1 parked", len(q.timers), len(q.ready))
	}
}
