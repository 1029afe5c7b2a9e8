package push

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerPrefix starts the name of every node's durable consumer; reclaim
// counts only consumers named so (a debugging consumer must not hold the floor).
const ConsumerPrefix = "push-"

// ConsumerName is the durable consumer name of a node.
func ConsumerName(nodeID string) string { return ConsumerPrefix + nodeID }

// Run creates (or resumes) this node's durable pull consumer, feeds its
// messages to the registered connections, and runs the attempts reaper and
// the fast-path memory sweep until ctx is done. It watches the consumer:
// when it is lost (deleted by its inactive threshold after a partition, by
// a stream reset or by an operator; or its consume ended) every session is
// withdrawn (ReasonResync) and the consumer recreated; when JetStream does
// not answer for longer than Config.Unreachable every session is withdrawn
// (ReasonUnavailable) until it answers again. Sessions may register only
// while the consumer is live (see Ready). Creating the consumer is retried
// with backoff, so Run returns nil after ctx ends, once the consume stopped;
// it returns an error only when Config.JS or Stream is missing.
func (r *Registry) Run(ctx context.Context) error {
	if r.cfg.JS == nil || r.cfg.Stream == "" {
		return errors.New("push: Config.JS and Stream are required to run")
	}
	defer r.sampled.Flush()
	defer func() {
		r.mu.Lock()
		r.health = healthStarting // a stopped consumer feeds nobody
		r.unlock()
	}()
	// Run returns only once ctx ended, which ends these too.
	var helpers sync.WaitGroup
	defer helpers.Wait()
	if r.settle.on && !r.cfg.listByHand {
		helpers.Go(func() { r.watchAlone(ctx) })
	}
	if r.cfg.Peers {
		helpers.Go(func() { r.runPeers(ctx) })
	}
	for {
		w, ok := r.start(ctx)
		if !ok {
			return nil // stopped while starting: a shutdown, not a failure
		}
		lost := r.watch(ctx, w)
		w.cc.Stop()
		<-w.cc.Closed()
		if !lost {
			return nil
		}
		r.metrics.consumerLost.Inc()
		r.lose()
	}
}

// consuming is one incarnation of the node's consumer being consumed.
type consuming struct {
	cons jetstream.Consumer
	cc   jetstream.ConsumeContext
	// nudge asks for a check now: the consume reported an error that can
	// mean the consumer is gone (deleted, not found, heartbeats missed).
	nudge chan struct{}
	// created identifies this incarnation: a consumer of the same name
	// created later (deleted and made again by someone else) is not ours.
	created time.Time
}

// start creates the consumer and starts consuming it, retrying with
// backoff until it succeeds (then the registry is live) or ctx ends.
func (r *Registry) start(ctx context.Context) (*consuming, bool) {
	delay := 100 * time.Millisecond
	for {
		w, err := r.consume(ctx)
		if err == nil {
			r.setLive()
			return w, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		r.log.Warn("start consumer; retrying (if it keeps failing, check NATS, or delete a foreign consumer of this name)",
			"consumer", ConsumerName(r.cfg.NodeID), "err", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// A pull request lives pullExpiry, and the server sends a heartbeat on it
// every pullHeartbeat while it has nothing to deliver. The client library
// notices a pull lost with its server (the server was SIGKILLed, or the
// consumer's leader moved) only when two heartbeats are missing, and then
// pulls again: with the library's defaults (30 s, 15 s) live delivery
// stalled for a whole pull's life after a NATS server died
// (docs/benchmarks-log.md, "3-node cluster: `make cluster` under chatload,
// steady and with kills (issue 11)"); with these, for two heartbeats. The
// cost is a heartbeat a second and a new pull every 10 s per idle node.
const (
	pullExpiry    = 10 * time.Second
	pullHeartbeat = time.Second
)

func (r *Registry) consume(ctx context.Context) (*consuming, error) {
	want := jetstream.ConsumerConfig{
		Durable:     ConsumerName(r.cfg.NodeID),
		Description: "chatd node " + r.cfg.NodeID + ": live delivery to its connections",
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     r.cfg.Lease,
		// One delivery more than the attempts: push never sends a frame for
		// it, it only tells push that the last attempt's lease expired. With
		// MaxDeliver = attempts, JetStream would give up on the message (and
		// move the ack floor past it) before the reaper abandons its stuck
		// recipient, and a last delivery lost on its way to this node would
		// never come again, leaving its recipient's pin behind for good.
		MaxDeliver:        r.cfg.MaxAttempts + 1,
		MaxAckPending:     r.cfg.MaxAckPending,
		InactiveThreshold: r.cfg.InactiveThreshold,
		// A new node has no connections yet: what was published before it
		// existed is for history, not for it. This is why no session may
		// register (and get `hello`) before the consumer exists.
		DeliverPolicy: jetstream.DeliverNewPolicy,
		FilterSubject: r.cfg.Filter,
	}
	cons, err := r.cfg.JS.CreateOrUpdateConsumer(ctx, r.cfg.Stream, want)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", ConsumerName(r.cfg.NodeID), err)
	}
	// The create reply cannot name this incarnation: for a consumer the
	// server recovered from its store at startup, it carries the recovery
	// time, while every later info carries the original creation time, and
	// the first check would take a restarted node's own consumer for a
	// replacement. An info right after the create says what checks will.
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer %s info: %w", ConsumerName(r.cfg.NodeID), err)
	}
	// Someone may have replaced the consumer between the create and the
	// info; a foreign one would deliver from wherever it was told to.
	if got := info.Config; got.Description != want.Description || got.DeliverPolicy != want.DeliverPolicy {
		return nil, fmt.Errorf("consumer %s was replaced by a foreign one (%q) while being created", want.Durable, got.Description)
	}
	w := &consuming{cons: cons, nudge: make(chan struct{}, 1), created: info.Created}
	w.cc, err = cons.Consume(r.handle,
		jetstream.PullMaxMessages(r.cfg.PullBatch),
		jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			r.sampled.Warn("reading the delivery stream failed; the messages it holds for this node's sessions wait until a pull succeeds (check NATS)", "consumer", ConsumerName(r.cfg.NodeID), "err", err)
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
				errors.Is(err, jetstream.ErrNoHeartbeat) {
				select {
				case w.nudge <- struct{}{}:
				default:
				}
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", ConsumerName(r.cfg.NodeID), err)
	}
	return w, nil
}

// watch runs the reaper and checks the consumer until ctx ends (false) or
// the consumer is lost (true).
func (r *Registry) watch(ctx context.Context, w *consuming) bool {
	reap := time.NewTicker(r.reapEvery())
	defer reap.Stop()
	check := time.NewTicker(r.cfg.CheckInterval)
	defer check.Stop()
	closed := w.cc.Closed()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-reap.C:
			r.Reap()
		case <-closed:
			r.log.Warn("consume ended; recreating the consumer", "consumer", ConsumerName(r.cfg.NodeID))
			return true
		case <-w.nudge:
			if r.check(ctx, w) {
				return true
			}
		case <-check.C:
			if r.check(ctx, w) {
				return true
			}
		}
	}
}

// minCheckTimeout is how long a check waits at least for its answer.
const minCheckTimeout = time.Second

// check asks JetStream for the consumer. It reports whether the consumer
// is gone (or was replaced by another of the same name, which this consume
// does not feed from); an unanswered check counts toward Config.Unreachable.
func (r *Registry) check(ctx context.Context, w *consuming) bool {
	// A short interval must not make a slow answer (a busy server) look
	// like none: a check that times out only counts toward Unreachable, so
	// a consumer replaced meanwhile would go unnoticed.
	cctx, cancel := context.WithTimeout(ctx, max(r.cfg.CheckInterval, minCheckTimeout))
	defer cancel()
	info, err := w.cons.Info(cctx)
	switch {
	case err == nil && !info.Created.Equal(w.created):
		r.log.Warn("consumer replaced behind this node's back; withdrawing every session and recreating it",
			"consumer", ConsumerName(r.cfg.NodeID), "created", info.Created, "ours", w.created)
		return true
	case err == nil:
		r.setLive()
		return false
	case ctx.Err() != nil:
		return false
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		r.log.Warn("consumer gone; withdrawing every session and recreating it",
			"consumer", ConsumerName(r.cfg.NodeID), "err", err)
		return true
	}
	r.unreachable(err)
	return false
}
