package push

import "time"

// Reap runs the attempts reaper once: every recipient still waiting on a
// message whose last attempt's lease has expired is abandoned (withdrawn and
// closed; it resyncs from history). A connection younger than Grace is
// spared until its grace ends. It also forgets fast-path entries, and the
// fast path's account of messages (settle.go), older than FastMemory. Run
// calls it on a ticker; tests call it after moving the clock.
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
	r.settle.forgetBefore(cutoff)
	for _, s := range r.sessions {
		for id, fe := range s.fast {
			if fe.at.Before(cutoff) {
				if !fe.acked {
					s.inflight--
				}
				delete(s.fast, id)
			}
		}
		r.releaseLocked(s)
	}
	r.unlock()
	for _, c := range victims {
		r.Withdraw(c, ReasonAbandoned)
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
