package push

// Pacing keeps a connection's un-acked frames within its budget
// (Config.MaxPending) instead of closing it when a fan-out burst passes it:
// a client whose acks lag behind a burst (a busy box, a stall of the node,
// the relay publishing a backlog) is healthy, and closing it would only add
// a reconnect and a history resync to the load that made it lag.
//
// The frames a connection has been handed and not acked are its in-flight
// count: fast-path frames whose stream message has not come yet, and the
// stream messages of its pending set that were sent. At the budget, the
// fast path hands it nothing (the message then goes through the stream, as
// for a full socket queue), and a stream delivery is held: it joins the
// pending set, so it pins the reclaim floor and the node does not ack the
// stream message (docs/architecture.md, invariant 2), but no frame goes out
// until an ack brings the in-flight count under the budget. A held message
// is not re-sent on a redelivery and counts against its attempts like any
// other: a connection that stops acking still reaches the attempts reaper
// (4000), and one with more than Config.MaxHeld messages held is withdrawn
// as overloaded (4001).

// atBudgetLocked reports whether s may be handed no new frame now.
func (r *Registry) atBudgetLocked(s *session) bool {
	return s.inflight >= r.cfg.MaxPending || s.nheld > 0
}

// holdLocked adds d to s's pending set without a frame.
func (r *Registry) holdLocked(s *session, d *delivery) {
	d.waiting[s] = true
	s.pending[d.seq] = d
	s.held = append(s.held, d)
	s.nheld++
	r.metrics.held.Inc()
	r.metrics.paced.Inc()
}

// sendLocked adds d to s's pending set and hands s its frame; a frame the
// socket's queue refused counts as sent: its lease runs and a redelivery
// sends it again.
func (r *Registry) sendLocked(s *session, d *delivery) bool {
	d.waiting[s] = false
	s.pending[d.seq] = d
	s.inflight++
	return r.handLocked(s, &d.m)
}

// doneLocked removes d from s's pending set (an ack), freeing s's budget.
func (r *Registry) doneLocked(s *session, d *delivery) {
	held := d.waiting[s]
	delete(d.waiting, s)
	delete(s.pending, d.seq)
	if held {
		s.nheld--
		r.metrics.held.Dec()
	} else {
		s.inflight--
	}
}

// releaseLocked sends s's held messages, oldest first, while it is under
// its budget. Entries acked or dropped since they were held are skipped.
func (r *Registry) releaseLocked(s *session) {
	for len(s.held) > 0 && s.inflight < r.cfg.MaxPending {
		d := s.held[0]
		s.held[0] = nil
		s.held = s.held[1:]
		if held, ok := d.waiting[s]; !ok || !held || s.pending[d.seq] != d {
			continue
		}
		s.nheld--
		r.metrics.held.Dec()
		if r.sendLocked(s, d) {
			r.metrics.framesReleased.Inc()
			r.metrics.firstFrames.Inc()
		}
	}
	if len(s.held) == 0 {
		s.held = nil // a burst's backing array goes with it
	}
}

// overHeldLocked reports whether s holds more than Config.MaxHeld messages.
func (r *Registry) overHeldLocked(s *session) bool { return s.nheld > r.cfg.MaxHeld }
