package push

import (
	"errors"
	"time"
)

// Errors of Ready and Attach. Both mean "try another node or again in a
// moment"; pkg/api answers them with 503 / close 1001.
var (
	// ErrNotConsuming: the node's consumer does not exist yet or is being
	// recreated, so a session registered now would miss what is published
	// until it exists (DeliverNew), while its `hello` promised live delivery.
	ErrNotConsuming = errors.New("push: the node's JetStream consumer is not consuming yet; retry shortly")
	// ErrUnreachable: JetStream has not answered for longer than
	// Config.Unreachable; the node's sessions were closed so their clients
	// reconnect to a healthy node.
	ErrUnreachable = errors.New("push: JetStream unreachable; connect to another node")
)

// health is where the consumer stands. Guarded by Registry.mu.
type health int

const (
	// healthStarting: the consumer is being created (first start or after
	// it was lost). No session may register.
	healthStarting health = iota
	// healthLive: the consumer exists and is consumed.
	healthLive
	// healthCutOff: JetStream did not answer for longer than the bound.
	// Every session was closed; none may register until it answers.
	healthCutOff
)

// Ready reports whether a session registered now gets live delivery: nil
// once the node's consumer exists and is consumed and JetStream answers;
// ErrNotConsuming or ErrUnreachable otherwise. A Registry without
// Config.JS (fast path only) has no consumer to wait for and is always
// ready. Safe for concurrent use; cheap (no I/O), so /readyz and the
// WebSocket gateway call it on every request.
func (r *Registry) Ready() error {
	r.mu.Lock()
	defer r.unlock()
	return r.readyLocked()
}

func (r *Registry) readyLocked() error {
	switch r.health {
	case healthLive:
		return nil
	case healthCutOff:
		return ErrUnreachable
	}
	return ErrNotConsuming
}

// Live is closed once the node's consumer is first consumed, when Ready
// first returns nil, so a node can say it is ready only once it is. It stays
// closed whatever happens later (Ready tells the state of the moment).
func (r *Registry) Live() <-chan struct{} { return r.live }

// setLive marks the consumer as consumed again and JetStream as answering.
func (r *Registry) setLive() {
	r.mu.Lock()
	was := r.health
	r.health = healthLive
	r.unreachableSince = time.Time{}
	select {
	case <-r.live:
	default:
		close(r.live)
	}
	r.unlock()
	if was != healthLive {
		r.log.Info("consumer live; accepting sessions")
	}
}

// unreachable records a failed check. Once checks have failed for longer
// than Config.Unreachable, the node gives its sessions up (close 1001) so
// their clients reconnect to a node that still delivers.
func (r *Registry) unreachable(err error) {
	now := r.cfg.Now()
	r.mu.Lock()
	if r.unreachableSince.IsZero() {
		r.unreachableSince = now
	}
	cut := r.health == healthLive && now.Sub(r.unreachableSince) >= r.cfg.Unreachable
	if cut {
		r.health = healthCutOff
	}
	since := r.unreachableSince
	r.unlock()
	if !cut {
		r.log.Debug("consumer check failed", "err", err, "since", since)
		return
	}
	r.log.Warn("JetStream unreachable; closing every session so clients reconnect elsewhere",
		"err", err, "since", since, "bound", r.cfg.Unreachable)
	r.withdrawAll(ReasonUnavailable)
}

// lose marks the consumer as gone (deleted, or its consume ended) and
// withdraws every session: their pins and in-flight deliveries belong to
// the old consumer, and a session must not stay registered through the gap
// before the new consumer exists. Their clients resync from history.
func (r *Registry) lose() {
	r.mu.Lock()
	r.health = healthStarting
	r.unlock()
	r.withdrawAll(ReasonResync)
	r.forgetDeliveries()
}

// forgetDeliveries drops the in-flight deliveries after every session was
// withdrawn: they refer to a consumer or stream sequences that are gone.
func (r *Registry) forgetDeliveries() {
	r.mu.Lock()
	clear(r.deliveries)
	clear(r.finals)
	r.unlock()
}

// withdrawAll withdraws and closes every registered session. The caller
// has already left healthLive, so no new session registers meanwhile.
func (r *Registry) withdrawAll(reason Reason) {
	for _, c := range r.AllConns() {
		r.Withdraw(c, reason)
	}
}
