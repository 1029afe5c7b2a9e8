package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd"
)

func sendTo(chat string, at time.Time) item {
	return item{req: chatd.SendRequest{Chat: chat}, queued: at}
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
	d := newDispatcher(nil, newFullAlarm(), 3, delay, 2, work, done)
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

// queueSend queues a send as Submit does: into the channel, then the alarm.
func queueSend(queue chan item, alarm *fullAlarm, chat string) {
	queue <- sendTo(chat, time.Now())
	alarm.queued(len(queue))
}

// While a window is open its sends wait in the channel (the dispatcher is
// not woken for each), and the one that would fill the batch wakes it at
// once: the batch goes out full long before the window's end.
func TestDispatcherSleepsThroughAWindowUntilTheBatchIsFull(t *testing.T) {
	const window = time.Hour
	queue := make(chan item, 16)
	alarm := newFullAlarm()
	work := make(chan *flight, 1)
	done := make(chan *flight, 1)
	d := newDispatcher(queue, alarm, 4, window, 1, work, done)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	ran := make(chan struct{})
	go func() { defer close(ran); d.run(ctx, stopped) }()
	defer func() {
		// Shutting down, the dispatcher flushes what waits, waits for its
		// batches to come back, and closes work.
		cancel()
		close(stopped)
		for f := range work {
			done <- f
		}
		<-ran
	}()

	queueSend(queue, alarm, "a") // opens the window: 3 more sends fill the batch
	for deadline := time.Now().Add(5 * time.Second); alarm.room.Load() != 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first send opened no window within 5s")
		}
	}
	queueSend(queue, alarm, "b")
	queueSend(queue, alarm, "a")
	time.Sleep(50 * time.Millisecond)
	if n := len(queue); n != 2 {
		t.Fatalf("%d sends left in the channel during the window, want 2 (the dispatcher woke for them)", n)
	}
	select {
	case f := <-work:
		t.Fatalf("a batch of %d went out before the window ended or the batch filled", len(f.items))
	default:
	}
	queueSend(queue, alarm, "c") // the fourth: the batch is full
	select {
	case f := <-work:
		if got := chatsOf(f); len(got) != 4 {
			t.Fatalf("batch %v, want all four sends", got)
		}
		done <- f
	case <-time.After(5 * time.Second):
		t.Fatal("a full batch did not go out within 5s of its last send")
	}
}
