package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go"
)

// Run relays until ctx is done. It listens for other nodes' commit
// announcements, contends for the relay lock while this node can reach
// NATS, and while it holds the lock drains the outbox. It returns after
// its goroutines exit.
func (r *Relay) Run(ctx context.Context) error {
	// A reconnect ends any wait at once: rows piled up while the link was
	// down, and the standby loop waits for the link before it contends.
	reconnected := r.nc.StatusChanged(nats.CONNECTED)
	defer r.nc.RemoveStatusListener(reconnected)
	// Drops the reply subscription, so nothing of the publisher outlives
	// Run (a round always ends before lead returns).
	defer r.pub.close()
	defer r.sampled.Flush()
	if r.cfg.WakeSubject != "" {
		sub, err := r.nc.Subscribe(r.cfg.WakeSubject, r.announced)
		if err != nil {
			return fmt.Errorf("relay: subscribe to commit announcements on %s: %w", r.cfg.WakeSubject, err)
		}
		// Unsubscribe stops the handler's goroutine (nats.go's, one per
		// subscription).
		defer sub.Unsubscribe() //nolint:errcheck // the connection may be closing; nothing to undo
	}
	for ctx.Err() == nil {
		if !r.nc.IsConnected() {
			// A node cut off from NATS must not take the relay from one
			// that can publish.
			pause(ctx, r.cfg.Standby, reconnected)
			continue
		}
		lock, held, err := r.cfg.Outbox.TryRelayLock(ctx)
		if err != nil && ctx.Err() == nil {
			r.sampled.Warn("try relay lock failed; standing by", "err", err)
		}
		if !held {
			pause(ctx, r.cfg.Standby, nil)
			continue
		}
		r.log.Info("relay active on this node")
		r.metrics.leader.Set(1)
		r.active.Store(true)
		r.held.lead(true)
		r.told(true)
		err = r.lead(ctx, lock, reconnected)
		r.told(false)
		r.held.lead(false)
		r.active.Store(false)
		r.metrics.leader.Set(0)
		lock.Release()
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, errPublish):
			// Two standby periods: every other node's relay tries the lock
			// at least once before this one may contend again, unless its
			// own link comes back first.
			hold := 2 * r.cfg.Standby
			r.log.Error("relay stepped down: it cannot publish to NATS; standing by so another node's relay takes over",
				"err", err, "hold", hold)
			pause(ctx, hold, reconnected)
		case err != nil:
			r.log.Warn("relay stepped down", "err", err)
			pause(ctx, r.cfg.Poll, nil)
		}
	}
	return nil
}

// told passes a change of the lead to OnLead.
func (r *Relay) told(leading bool) {
	if r.cfg.OnLead != nil {
		r.cfg.OnLead(leading)
	}
}

// lead drains the outbox while this node holds the relay lock. It returns
// nil when ctx is done, an error when the lock may be lost, and an error
// wrapping errPublish when publishing failed for StepDownAfter.
func (r *Relay) lead(ctx context.Context, lock *store.RelayLock, reconnected <-chan nats.Status) error {
	backoff := backoffMin
	failing := false           // the last round failed (NATS or PostgreSQL)
	var failingSince time.Time // zero while publishing works
	lastCheck := r.cfg.Now()
	for ctx.Err() == nil {
		if r.cfg.Now().Sub(lastCheck) > r.cfg.Standby {
			if err := lock.Check(ctx); err != nil {
				return fmt.Errorf("relay lock lost: %w", err)
			}
			lastCheck = r.cfg.Now()
		}
		n, done, err := r.round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			if failing {
				// The count of suppressed warnings goes out now, not at
				// the next failure.
				r.sampled.Flush()
				r.log.Info("relay rounds succeed again")
				failing, failingSince = false, time.Time{}
			}
			backoff = backoffMin
			switch {
			case r.cut:
				// Commits would only add younger rows behind the one
				// that waits for its acks.
				pause(ctx, r.settleTick(), reconnected)
			case n < r.cfg.Batch:
				r.idle(ctx, reconnected)
			}
			continue
		}
		// NATS or PostgreSQL is down: rows stay in the outbox and are
		// republished from the first unacknowledged one.
		r.metrics.errors.Inc()
		failing = true
		if errors.Is(err, errPublish) {
			// Only NATS-side failures count: another node shares this
			// node's PostgreSQL, but maybe not its NATS link.
			// A partial round's progress restarts the clock: slow acks
			// under load are no reason to step down.
			now := r.cfg.Now()
			if failingSince.IsZero() || done > 0 {
				failingSince = now
			}
			bound := r.cfg.StepDownAfter
			if r.nc.IsConnected() {
				bound *= connectedStepDownFactor
			}
			if failed := now.Sub(failingSince); failed >= bound {
				r.sampled.Flush()
				return fmt.Errorf("publishing failed for %v: %w", failed.Round(time.Millisecond), err)
			}
		}
		r.sampled.Warn("relay round failed; will retry", "err", err)
		pause(ctx, backoff, reconnected)
		backoff = min(backoff*2, backoffMax)
	}
	return nil
}

// idle waits for a commit signal, a reconnect or the fallback poll.
func (r *Relay) idle(ctx context.Context, reconnected <-chan nats.Status) {
	t := time.NewTimer(r.cfg.Poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.wake:
	case <-reconnected:
	case <-t.C:
	}
}

// pause waits for d, ctx or a signal on wake (nil: none).
func pause(ctx context.Context, d time.Duration, wake <-chan nats.Status) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}
