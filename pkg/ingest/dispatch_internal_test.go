package ingest

import (
	"testing"
	"time"
)

func sendTo(chat string, at time.Time) item {
	return item{req: Request{Chat: chat}, queued: at}
}

func chatsOf(f *flight) []string {
	var out []string
	for _, it := range f.items {
		out = append(out, it.req.Chat)
	}
	return out
}

// The dispatcher's rules without a database: a batch waits for the gather
// delay from its oldest send unless it is full; a chat with a batch out
// waits (in order) for it to come back; an idle committer takes the rest.
func TestDispatcherBatchRules(t *testing.T) {
	const delay = 5 * time.Millisecond
	work := make(chan *flight, 4)
	done := make(chan *flight, 4)
	d := newDispatcher(nil, 3, delay, 2, work, done)
	t0 := time.Now()

	d.add(sendTo("a", t0))
	d.add(sendTo("a", t0))
	if wait := d.dispatch(t0.Add(time.Millisecond), false); wait != 4*time.Millisecond || len(work) != 0 {
		t.Fatalf("2 of 3 sends, 1 ms old: dispatched %d, wait %v; want none and 4ms", len(work), wait)
	}
	d.dispatch(t0.Add(delay), false)
	if len(work) != 1 {
		t.Fatalf("after the delay: %d batches out, want 1", len(work))
	}
	first := <-work
	if got := chatsOf(first); len(got) != 2 {
		t.Fatalf("first batch %v, want both sends of a", got)
	}

	// a is in flight: its new sends wait; b's go to the other committer at once when full.
	d.add(sendTo("a", t0.Add(delay)))
	d.add(sendTo("b", t0.Add(delay)))
	d.add(sendTo("b", t0.Add(delay)))
	d.add(sendTo("b", t0.Add(delay)))
	d.dispatch(t0.Add(delay), false)
	if len(work) != 1 {
		t.Fatalf("full batch of b: %d out, want 1", len(work))
	}
	second := <-work
	if got := chatsOf(second); len(got) != 3 || got[0] != "b" || got[2] != "b" {
		t.Fatalf("second batch %v, want b b b (a is in flight)", got)
	}
	// No idle committer left: nothing more goes out even when flushing.
	d.dispatch(t0.Add(time.Hour), true)
	if len(work) != 0 {
		t.Fatalf("with both committers busy %d batches went out", len(work))
	}
	// a's batch comes back: a's waiting send may go now.
	d.release(first)
	d.dispatch(t0.Add(time.Hour), false)
	if len(work) != 1 {
		t.Fatalf("after a's batch returned: %d out, want 1", len(work))
	}
	if got := chatsOf(<-work); len(got) != 1 || got[0] != "a" {
		t.Fatalf("third batch %v, want a", got)
	}
	if d.waiting != 0 || len(d.order) != 0 || len(d.chats) != 0 {
		t.Fatalf("left behind: waiting %d, order %d, chats %d", d.waiting, len(d.order), len(d.chats))
	}
}
