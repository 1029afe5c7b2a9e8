package push

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerName is the durable consumer name of a node.
func ConsumerName(nodeID string) string { return "push-" + nodeID }

// Run creates (or resumes) this node's durable pull consumer, feeds its
// messages to the registered connections, and runs the attempts reaper and
// the fast-path memory sweep until ctx is done. It returns after the
// consumer stopped.
func (r *Registry) Run(ctx context.Context) error {
	if r.cfg.JS == nil {
		return errors.New("push: Config.JS is required to run")
	}
	cons, err := r.cfg.JS.CreateOrUpdateConsumer(ctx, r.cfg.Stream, jetstream.ConsumerConfig{
		Durable:           ConsumerName(r.cfg.NodeID),
		Description:       "chatd node " + r.cfg.NodeID + ": live delivery to its connections",
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           r.cfg.Lease,
		MaxDeliver:        r.cfg.MaxAttempts,
		MaxAckPending:     r.cfg.MaxAckPending,
		InactiveThreshold: r.cfg.InactiveThreshold,
		// A new node has no connections yet: what was published before it
		// existed is for history, not for it.
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a shutdown, not a failure
		}
		return fmt.Errorf("create consumer %s: %w", ConsumerName(r.cfg.NodeID), err)
	}
	cc, err := cons.Consume(r.handle,
		jetstream.PullMaxMessages(r.cfg.PullBatch),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			r.log.Warn("consume", "err", err)
		}))
	if err != nil {
		return fmt.Errorf("consume %s: %w", ConsumerName(r.cfg.NodeID), err)
	}
	tick := time.NewTicker(r.reapEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			cc.Stop()
			<-cc.Closed()
			return nil
		case <-tick.C:
			r.Reap()
		}
	}
}

// reapEvery is the reaper's tick: a fraction of the lease, so an abandon
// fires within about a quarter lease of the final lease's expiry.
func (r *Registry) reapEvery() time.Duration {
	d := r.cfg.Lease / 4
	if d < 20*time.Millisecond {
		d = 20 * time.Millisecond
	}
	if d > time.Second {
		d = time.Second
	}
	return d
}

// Reap runs the attempts reaper once: every recipient still waiting on a
// message whose last attempt's lease has expired is abandoned (withdrawn and
// closed; it resyncs from history). A connection younger than Grace is
// spared until its grace ends. It also forgets fast-path entries older than
// FastMemory. Run calls it on a ticker; tests call it after moving the clock.
func (r *Registry) Reap() {
	now := r.cfg.Now()
	var victims []Conn
	r.mu.Lock()
	for d := range r.finals {
		if now.Before(d.final) {
			continue
		}
		for s := range d.waiting {
			if r.cfg.Grace > 0 && now.Sub(s.attached) < r.cfg.Grace {
				if end := s.attached.Add(r.cfg.Grace); end.After(d.final) {
					d.final = end
				}
				continue
			}
			victims = append(victims, s.conn)
		}
	}
	cutoff := now.Add(-r.cfg.FastMemory)
	for id, at := range r.streamFirst {
		if at.Before(cutoff) {
			delete(r.streamFirst, id)
		}
	}
	for _, s := range r.sessions {
		for id, fe := range s.fast {
			if fe.at.Before(cutoff) {
				delete(s.fast, id)
			}
		}
	}
	r.mu.Unlock()
	for _, c := range victims {
		r.Withdraw(c, ReasonAbandoned)
	}
}
