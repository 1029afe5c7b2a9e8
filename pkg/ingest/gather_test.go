package ingest

import (
	"context"
	"testing"
	"time"
)

// A batch's gather window starts when its first item was queued: an item
// that already waited (behind the previous commit) is not held for a
// whole delay more, and a fresh one still collects company for the delay.
func TestGatherWindowCountsFromQueueing(t *testing.T) {
	const delay = 200 * time.Millisecond
	q := make(chan int, 4)
	g := newGatherer(q, 10, delay)

	start := time.Now()
	got := g.fill(context.Background(), []int{1}, start.Add(-150*time.Millisecond))
	if took := time.Since(start); took > 120*time.Millisecond {
		t.Fatalf("an item queued 150 ms ago waited %v more (window %v): the window restarted when the worker took it", took, delay)
	}
	if len(got) != 1 {
		t.Fatalf("batch %v, want [1]", got)
	}

	start = time.Now()
	go func() { time.Sleep(50 * time.Millisecond); q <- 2 }()
	got = g.fill(context.Background(), []int{1}, start)
	if took := time.Since(start); took < delay-10*time.Millisecond {
		t.Fatalf("a fresh item's batch closed after %v, before its %v window", took, delay)
	}
	if len(got) != 2 {
		t.Fatalf("batch %v, want the item queued inside the window too", got)
	}

	start = time.Now()
	got = g.fill(context.Background(), []int{1}, start.Add(-time.Hour))
	if took := time.Since(start); took > 50*time.Millisecond || len(got) != 1 {
		t.Fatalf("an item past its window: batch %v after %v, want [1] at once", got, took)
	}
}
