package push

// A frame handed to a connection under the registry's lock is only queued
// there (Conn.Deliver); its socket write waits until the lock is released
// (Conn.Flush). A fan-out to a large room is thousands of writes: made
// under the lock, they held every other connection's acks, sends and
// fan-outs on the node for as long, and longer when the busy thread lost
// its core halfway.

// handLocked queues m's frame on s's connection and remembers the
// connection for the write after the lock. It reports whether the
// connection's queue took the frame.
func (r *Registry) handLocked(s *session, m *Outgoing) bool {
	if !s.conn.Deliver(m) {
		return false
	}
	r.unwritten = append(r.unwritten, s.conn)
	return true
}

// unlock releases the registry's lock, then writes what was handed under
// it. Every holder of the lock releases it here, so a frame never waits for
// a later holder.
func (r *Registry) unlock() {
	conns := r.unwritten
	r.unwritten = nil
	r.mu.Unlock()
	for _, c := range conns {
		c.Flush()
	}
}
