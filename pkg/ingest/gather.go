package ingest

import (
	"context"
	"time"
)

// gatherer builds the read-receipt batches from a bounded queue (sends are
// batched by the dispatcher, which also keeps chats apart).
type gatherer[T any] struct {
	queue <-chan T
	max   int
	delay time.Duration
	timer *time.Timer
}

func newGatherer[T any](queue <-chan T, max int, delay time.Duration) *gatherer[T] {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &gatherer[T]{queue: queue, max: max, delay: delay, timer: t}
}

// fill adds queued items to batch (which holds its first item) until it
// holds max or delay has passed since first, when that item was queued.
// Counting from the queueing, not from when the worker took the item, keeps
// a send that waited out the previous commit from waiting a full delay
// more. Items already waiting are taken without waiting, so a busy queue
// yields full batches at once. It stops early when ctx ends.
func (g *gatherer[T]) fill(ctx context.Context, batch []T, first time.Time) []T {
	batch = g.queued(batch)
	if len(batch) >= g.max {
		return batch
	}
	wait := g.delay - time.Since(first)
	if wait <= 0 {
		return batch
	}
	g.timer.Reset(wait)
	defer g.timer.Stop()
	for len(batch) < g.max {
		select {
		case it := <-g.queue:
			batch = append(batch, it)
		case <-g.timer.C:
			return batch
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

// queued adds the items waiting right now to batch, up to max, without
// blocking: the shutdown drain takes batches this way.
func (g *gatherer[T]) queued(batch []T) []T {
	for len(batch) < g.max {
		select {
		case it := <-g.queue:
			batch = append(batch, it)
		default:
			return batch
		}
	}
	return batch
}
