package push

import "time"

// The fast path's account of each message, for a relay that keeps settled
// messages out of the delivery stream (Config.Settle, stream.Settler).
//
// A message is settled on this node when the fast path handed its frame to
// every connection of its recipients registered at that moment, and each of
// those connections has since acked it or left live delivery (withdrawn,
// detached: its client resyncs from history). A connection registered after
// the fast path ran sent its `hello` after the commit, so the message is in
// the history that client reads on `hello` (docs/architecture.md, "Recover").
// So a settled message needs nothing the stream delivery would give it: no
// frame, no lease, no pin. With a single node (the embedded NATS) no other
// node's connections need it either, and the relay may delete its outbox row
// without publishing it. That is invariant 2 as it stands: the entry goes
// only after every recipient connection acked it or was removed.

// localEntry is one message the fast path handled.
type localEntry struct {
	// waiting counts the connections handed the frame that have neither
	// acked nor left.
	waiting int
	// missed is set when a registered recipient connection did not get the
	// frame (its queue was full): only the stream delivery reaches it.
	missed bool
	// sessions got the frame; Forget drops their fast entries once the
	// message is settled, since no stream delivery will come to do it.
	sessions []*session
	at       time.Time // when the fast path ran; Reap forgets it after FastMemory
}

// noteFastLocked records what the fast path did with message id.
func (r *Registry) noteFastLocked(id string, sessions []*session, missed bool, now time.Time) {
	if !r.cfg.Settle {
		return
	}
	r.local[id] = &localEntry{waiting: len(sessions), missed: missed, sessions: sessions, at: now}
}

// settleOneLocked counts down message id for a connection that acked it or
// left live delivery before acking it.
func (r *Registry) settleOneLocked(id string) {
	if le := r.local[id]; le != nil {
		le.waiting--
	}
}

// Settled reports whether message id is settled on this node (see above).
// It is false for a message the fast path has not handled (yet), so the
// relay publishes it after its wait, as it would without this check.
// Implements stream.Settler.
func (r *Registry) Settled(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	le := r.local[id]
	return le != nil && !le.missed && le.waiting <= 0
}

// Forget drops the account of messages the relay is done with (their rows
// left the outbox). skipped were never published: their connections' fast
// entries go too, since no stream delivery will come to clear them.
// published went to the stream, perhaps in an earlier round whose acks timed
// out: their fast entries stay, so the stream delivery neither re-sends the
// frame nor waits for an ack that already came. Implements stream.Settler.
func (r *Registry) Forget(skipped, published []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range published {
		delete(r.local, id)
	}
	for _, id := range skipped {
		le := r.local[id]
		if le == nil {
			continue
		}
		delete(r.local, id)
		for _, s := range le.sessions {
			delete(s.fast, id) // a no-op on a withdrawn session's nil map
		}
	}
}
