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
//
// The window is one reused timer whose function flushes: a goroutine that
// waited for a batch to start and then for its timer woke twice and made a
// timer per batch, and with deliveries spread thin (a group member gets a
// message every few hundred ms) every delivery is a batch of its own.
type acker struct {
	delay  time.Duration
	maxIDs int
	flush  func(ids []string) error

	timer  *time.Timer // flushes the batch when its window ends
	failed chan error  // the first failed timed flush, for run

	mu      sync.Mutex
	ids     []string
	running bool // between run's start and end: batches arm the timer
}

func newAcker(delay time.Duration, maxIDs int, flush func([]string) error) *acker {
	a := &acker{
		delay:  delay,
		maxIDs: max(maxIDs, 1),
		flush:  flush,
		failed: make(chan error, 1),
	}
	a.timer = time.AfterFunc(time.Hour, a.timedFlush)
	a.timer.Stop()
	return a
}

// add queues id for the next ack frame. It never blocks.
func (a *acker) add(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, id)
	if !a.running {
		return
	}
	switch len(a.ids) {
	case 1:
		a.timer.Reset(a.delay)
	case a.maxIDs:
		a.timer.Reset(0) // a full batch flushes without waiting
	}
}

// timedFlush runs on the timer's own goroutine when a batch's window ends.
func (a *acker) timedFlush() {
	if err := a.drain(); err != nil {
		select {
		case a.failed <- err:
		default:
		}
	}
}

// run lets batches flush on their timer until ctx ends or a flush fails, and
// returns the failure. It does not flush on exit: a clean shutdown calls
// drain before closing the connection.
func (a *acker) run(ctx context.Context) error {
	a.mu.Lock()
	a.running = true
	switch n := len(a.ids); {
	case n >= a.maxIDs:
		a.timer.Reset(0)
	case n > 0:
		a.timer.Reset(a.delay) // ids that came before run started
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running = false
		a.timer.Stop()
		a.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return nil
	case err := <-a.failed:
		return err
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
