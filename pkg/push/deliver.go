package push

import (
	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/nats-io/nats.go/jetstream"
)

// ackFailed is the warning for a stream message whose ack did not reach
// JetStream: said the same wherever an ack fails.
const ackFailed = "could not ack a stream message; JetStream delivers it again after the lease, and its recipients may get it twice (they dedupe by id; check NATS)"

// FastPath hands a message this node just committed to the recipients
// connected to this node, before the relay has published it. It takes no
// lease: the stream delivery that follows is authoritative (it acks at once
// for a recipient that already acked, and otherwise starts the lease without
// re-sending). recipients are the chat's members frozen at acceptance. With
// Config.Settle it keeps the account the relay's Settled reads.
func (r *Registry) FastPath(m *chatd.Message, recipients []string) {
	r.fastPath(m, recipients, fastOwn, "")
}

// FastPathForwarded is FastPath for a message the node whose relay leads
// committed for this one (pkg/forward): the frames go out, but the account
// is kept when that node shares the message (peers.go), since only its
// relay asks.
func (r *Registry) FastPathForwarded(m *chatd.Message, recipients []string) {
	r.fastPath(m, recipients, fastFrames, "")
}

// fastMode says what a fast path keeps for settling.
type fastMode uint8

const (
	fastOwn    fastMode = iota // committed here: an entry the relay asks about
	fastShared                 // committed by origin: an entry reported to it once settled (peers.go)
	fastFrames                 // frames only
)

func (r *Registry) fastPath(m *chatd.Message, recipients []string, mode fastMode, origin string) {
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.unlock()
	if _, ok := r.deliveries[m.ID]; ok {
		return // the stream delivery overtook the fast path
	}
	if _, ok := r.streamFirst[m.ID]; ok {
		delete(r.streamFirst, m.ID)
		return // overtaken, and already acked by everyone
	}
	account := r.settle.on && mode != fastFrames
	var out *Outgoing // made for the first connection that gets a frame
	var got []*session
	missed, offline := false, false
	for _, user := range recipients {
		if user != m.From && len(r.byUser[user]) == 0 {
			offline = true
		}
		for _, s := range r.byUser[user] {
			if user == m.From && s.conn.Device() == m.Device {
				continue
			}
			if fe, seen := s.fast[m.ID]; seen {
				if !fe.acked && account {
					fe.counted = true
					s.fast[m.ID] = fe
					got = append(got, s)
				}
				continue
			}
			// A connection at its budget gets the message from the stream
			// delivery, held until its acks make room (pace.go).
			if r.atBudgetLocked(s) {
				missed = true
				r.metrics.pacedFast.Inc()
				continue
			}
			if out == nil {
				out = NewOutgoing(m)
			}
			// Remember only frames that went out: if the socket's queue was
			// full, the stream delivery sends the frame instead of waiting a
			// whole lease for an ack that cannot come.
			if r.handLocked(s, out) {
				s.fast[m.ID] = fastEntry{at: now, m: &out.Message, counted: account}
				s.inflight++
				if account {
					got = append(got, s)
				}
				r.metrics.framesFast.Inc()
				r.metrics.firstFrames.Inc()
			} else {
				missed = true
			}
		}
	}
	switch {
	case !account:
	case mode == fastShared:
		r.settle.handledFor(origin, m.ID, got, missed, now)
	default:
		r.settle.handled(m.ID, got, missed, offline, now)
	}
}

// handle takes one message from the node's consumer.
func (r *Registry) handle(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		r.sampled.Error("stream message without metadata; terminating it", "err", err)
		_ = msg.Term()
		return
	}
	env, err := codec.DecodeEnvelope(msg.Data())
	if err != nil || env.Message.ID == "" {
		r.sampled.Error("undecodable stream message; terminating it", "seq", meta.Sequence.Stream, "err", err)
		_ = msg.TermWithReason("undecodable envelope")
		return
	}
	env.Message.Device = env.Device
	if r.cfg.Seen != nil {
		r.cfg.Seen(&env)
	}
	if int(meta.NumDelivered) > r.cfg.MaxAttempts {
		r.expired(msg, meta, &env)
		return
	}
	ackNow, over := r.deliver(msg, meta, &env)
	if ackNow {
		if err := msg.Ack(); err != nil {
			r.sampled.Warn(ackFailed, "seq", meta.Sequence.Stream, "err", err)
		}
	}
	// The overload reaper: a connection with more than MaxHeld messages
	// held back by pacing is withdrawn, so it cannot pin the floor.
	for _, c := range over {
		r.Withdraw(c, ReasonOverloaded)
	}
}

// deliver records the delivery and sends frames. It returns true when no
// local recipient needs the message, so it can be acked at once (offline
// recipients hold nothing: they recover from history), and the connections
// that went over MaxHeld.
func (r *Registry) deliver(msg jetstream.Msg, meta *jetstream.MsgMetadata, env *chatd.Envelope) (bool, []Conn) {
	seq := meta.Sequence.Stream
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.unlock()
	d := r.deliveries[env.Message.ID]
	switch {
	case d != nil && d.seq != seq:
		// A second copy under another sequence (the relay republished after
		// the duplicate window forgot the id): the first copy covers it.
		return true, nil
	case d != nil:
		// JetStream redelivered: the lease expired with recipients waiting.
		d.msg = msg
		for s, held := range d.waiting {
			if held {
				continue // not sent yet: its frame goes out when released
			}
			if r.handLocked(s, &d.m) {
				r.metrics.framesRedelivery.Inc()
				r.metrics.redeliveries.Inc()
			}
		}
	default:
		r.settle.deliveredShared(env.Message.ID)
		d = &delivery{seq: seq, msg: msg, m: Outgoing{Message: env.Message}, sentAt: now}
		if r.fanOutLocked(d, env.Recipients) {
			r.streamFirst[d.m.ID] = now
		}
		if len(d.waiting) == 0 {
			return true, nil
		}
		r.deliveries[d.m.ID] = d
	}
	if int(meta.NumDelivered) >= r.cfg.MaxAttempts {
		d.final = now.Add(r.cfg.Lease)
		r.finals[d] = struct{}{}
	}
	var over []Conn
	for s := range d.waiting {
		if r.overHeldLocked(s) {
			over = append(over, s.conn)
		}
	}
	return false, over
}

// fanOutLocked adds d to the pending set of every local recipient that has
// not acked it through the fast path, sending the frame to those the fast
// path did not reach. It reports whether it sent any frame itself.
func (r *Registry) fanOutLocked(d *delivery, recipients []string) (sent bool) {
	for _, user := range recipients {
		for _, s := range r.byUser[user] {
			if user == d.m.From && s.conn.Device() == d.m.Device {
				continue
			}
			fe, fast := s.fast[d.m.ID]
			if fast {
				delete(s.fast, d.m.ID)
				if fe.acked {
					continue
				}
			}
			if d.waiting == nil {
				// Made here, not with d: in pairs the fast path's ack has
				// usually come first, and nobody waits.
				d.waiting = make(map[*session]bool, 1)
			}
			switch {
			case fast:
				// Sent by the fast path: already in flight, its lease starts now.
				d.waiting[s] = false
				s.pending[d.seq] = d
			case r.atBudgetLocked(s):
				r.holdLocked(s, d)
			case r.sendLocked(s, d):
				r.metrics.framesStream.Inc()
				r.metrics.firstFrames.Inc()
				sent = true
			}
		}
	}
	return sent
}

// Ack records that c has the messages with these ids. Each id leaves c's
// pending set individually, so the pin only rises when the lowest one is
// acked. A stream message is acked once no local recipient waits for it.
// Each ack frees a place in c's budget for a message held back (pace.go).
// Acks from a connection that is no longer registered are ignored.
func (r *Registry) Ack(c Conn, ids []string) {
	now := r.cfg.Now()
	var acks []jetstream.Msg
	var acked []*chatd.Message // for Config.Acked
	r.mu.Lock()
	s := r.currentLocked(c)
	if s == nil {
		r.unlock()
		return
	}
	for _, id := range ids {
		if d := r.deliveries[id]; d != nil {
			if _, ok := d.waiting[s]; !ok {
				continue
			}
			r.doneLocked(s, d)
			r.metrics.ackSeconds.Observe(now.Sub(d.sentAt).Seconds())
			if r.cfg.Acked != nil {
				acked = append(acked, &d.m.Message)
			}
			if len(d.waiting) == 0 {
				acks = append(acks, r.finishLocked(d))
			}
			continue
		}
		if fe, ok := s.fast[id]; ok && !fe.acked {
			fe.acked = true
			s.fast[id] = fe
			s.inflight--
			if fe.counted {
				r.settle.done(id)
			}
			if r.cfg.Acked != nil {
				acked = append(acked, fe.m)
			}
		}
	}
	r.releaseLocked(s)
	r.unlock()
	r.metrics.acks.Add(float64(len(ids)))
	for _, m := range acked {
		r.cfg.Acked(c.User(), m.Chat, m.Seq)
	}
	r.ackAll(acks)
}

// expired takes the extra delivery (MaxDeliver is MaxAttempts+1): JetStream
// redelivers only after the last attempt's lease expired, so whoever still
// waits for the message is abandoned now, without another frame. The
// withdrawal acks the message once nobody waits; if nobody was waiting (the
// reaper was first, or the node restarted since) it is acked here. Either
// way the ack floor passes the message only after its recipients were
// withdrawn (docs/architecture.md, invariant 2). This delivery also arrives
// when the last attempt itself never reached this node, so a lost delivery
// cannot leave a pin behind.
func (r *Registry) expired(msg jetstream.Msg, meta *jetstream.MsgMetadata, env *chatd.Envelope) {
	var victims []Conn
	waiting := 0
	r.mu.Lock()
	if d := r.deliveries[env.Message.ID]; d != nil && d.seq == meta.Sequence.Stream {
		d.msg = msg
		waiting = len(d.waiting)
		now := r.cfg.Now()
		for s := range d.waiting {
			// A connection still in its grace is left to Reap, which
			// abandons it when the grace ends (d.final was extended).
			if r.cfg.Grace > 0 && now.Sub(s.attached) < r.cfg.Grace {
				continue
			}
			victims = append(victims, s.conn)
		}
	}
	r.unlock()
	for _, c := range victims {
		r.Withdraw(c, ReasonAbandoned)
	}
	if waiting == 0 {
		if err := msg.Ack(); err != nil {
			r.sampled.Warn(ackFailed, "seq", meta.Sequence.Stream, "err", err)
		}
	}
}
