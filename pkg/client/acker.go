package client

import (
	"context"
	"sync"
	"time"
)

// acker batches the ids of received `msg` frames: the first id of a batch
// starts a window of delay, and when it ends every id collected is flushed in
// one `ack` frame (several if a batch holds more than maxIDs, so a frame
// stays under the server's max_frame_bytes). Acking promptly is duty 1; the
// batch keeps a burst of deliveries from costing a frame each.
type acker struct {
	delay  time.Duration
	maxIDs int
	flush  func(ids []string) error

	kick chan struct{} // a batch has started
	full chan struct{} // a batch reached maxIDs: flush without waiting

	mu  sync.Mutex
	ids []string
}

func newAcker(delay time.Duration, maxIDs int, flush func([]string) error) *acker {
	return &acker{
		delay:  delay,
		maxIDs: max(maxIDs, 1),
		flush:  flush,
		kick:   make(chan struct{}, 1),
		full:   make(chan struct{}, 1),
	}
}

// add queues id for the next ack frame. It never blocks.
func (a *acker) add(id string) {
	a.mu.Lock()
	a.ids = append(a.ids, id)
	n := len(a.ids)
	a.mu.Unlock()
	if n == 1 {
		signal(a.kick)
	}
	if n == a.maxIDs {
		signal(a.full)
	}
}

// run flushes batches until ctx ends or a flush fails. It does not flush on
// exit: a clean shutdown calls drain before closing the connection.
func (a *acker) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.kick:
		}
		t := time.NewTimer(a.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-a.full:
			t.Stop()
		}
		if err := a.drain(); err != nil {
			return err
		}
	}
}

// drain flushes every queued id now.
func (a *acker) drain() error {
	a.mu.Lock()
	ids := a.ids
	a.ids = nil
	a.mu.Unlock()
	for len(ids) > 0 {
		n := min(len(ids), a.maxIDs)
		if err := a.flush(ids[:n]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// signal does a non-blocking send on a 1-buffered wake-up channel.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
