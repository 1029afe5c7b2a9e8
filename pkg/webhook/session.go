package webhook

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/nats-io/nats.go/jetstream"
)

// session is one consume of an endpoint's consumer: the lanes that post,
// the events they hold, and what keeps those alive.
type session struct {
	h      *hook
	cons   jetstream.Consumer
	ctx    context.Context
	cancel context.CancelFunc
	lanes  []chan item
	wg     sync.WaitGroup

	mu sync.Mutex
	// held are the stream messages taken and not yet acked, by stream
	// sequence: the latest delivery of each, so that acks and keep-alives
	// go to the delivery JetStream knows of.
	held map[uint64]jetstream.Msg
}

// item is an event on its way to the endpoint: its stream sequence, what
// a dead letter records of it, and the signed body.
type item struct {
	seq       uint64
	id        string // webhook-id
	chat      string
	eventSeq  int64
	messageID string
	kind      chatd.EventKind
	body      []byte
}

func newSession(ctx context.Context, h *hook, cons jetstream.Consumer) *session {
	s := &session{h: h, cons: cons, held: map[uint64]jetstream.Msg{}, lanes: make([]chan item, h.cfg.Workers)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	for i := range s.lanes {
		s.lanes[i] = make(chan item, laneQueue)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.work(s.lanes[i])
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.keepAlive()
	}()
	return s
}

// stop ends the session: the lanes stop, and what it holds goes back to
// the stream (nak, so the next deliverer gets it at once).
func (s *session) stop() {
	s.cancel()
	for _, l := range s.lanes {
		close(l)
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq, m := range s.held {
		m.Nak() //nolint:errcheck // a lost nak redelivers it after the ack wait
		delete(s.held, seq)
	}
	// The naks (and the lanes' last acks) are only buffered: a node that
	// shuts down closes its connection next, and the next deliverer would
	// wait out the ack wait for what was lost with it.
	if nc := s.h.cfg.JS.Conn(); nc != nil && nc.IsConnected() {
		nc.FlushTimeout(time.Second) //nolint:errcheck // as above
	}
}

// catchUp takes over the events a previous deliverer held unacked (it
// died, or gave them back when it stopped). JetStream redelivers them when
// their ack wait runs out or at once after a nak, but not in stream order
// across its redelivery passes, and events delivered for the first time
// can come in between: so all are gathered until every held one is back
// (or two ack waits passed), then routed in stream order, which keeps
// each chat's order. It reports false when the session ended meanwhile.
func (s *session) catchUp(it jetstream.MessagesContext, info *jetstream.ConsumerInfo) bool {
	upto, want := info.Delivered.Stream, info.NumAckPending
	s.h.log.Info("taking over the events the previous deliverer held", "events", want)
	ctx, cancel := context.WithTimeout(s.ctx, 2*s.h.cfg.AckWait+pullExpiry)
	defer cancel()
	old := map[uint64]bool{}
	var seqs []uint64
	for len(old) < want {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if s.ctx.Err() != nil {
			return false
		}
		if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			s.h.log.Warn("not every event the previous deliverer held came back; going on (they come later, out of order)",
				"held", want, "back", len(old))
			break
		}
		if err != nil {
			continue
		}
		seq, ok := s.seqOf(msg)
		if !ok {
			continue
		}
		s.mu.Lock()
		_, dup := s.held[seq]
		s.held[seq] = msg // kept alive by keepAlive while gathering
		s.mu.Unlock()
		if !dup {
			seqs = append(seqs, seq)
		}
		if seq <= upto {
			old[seq] = true
		}
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		s.mu.Lock()
		msg := s.held[seq]
		s.mu.Unlock()
		s.route(seq, msg)
	}
	return true
}

// dispatch routes one stream message to its chat's lane. A lane full
// blocks the consume: back-pressure within MaxAckPending.
func (s *session) dispatch(msg jetstream.Msg) {
	seq, ok := s.seqOf(msg)
	if !ok {
		return
	}
	s.mu.Lock()
	_, dup := s.held[seq]
	// A redelivery of an event a lane holds (its keep-alive came late)
	// replaces it: acks go to the newest delivery, and the lane acks it.
	s.held[seq] = msg
	s.mu.Unlock()
	if !dup {
		s.route(seq, msg)
	}
}

// seqOf is msg's stream sequence; a message without one is dropped.
func (s *session) seqOf(msg jetstream.Msg) (uint64, bool) {
	meta, err := msg.Metadata()
	if err != nil {
		s.h.sampled.Warn("webhook: a stream message without metadata; dropped", "err", err)
		msg.Term() //nolint:errcheck // nothing to deliver either way
		return 0, false
	}
	return meta.Sequence.Stream, true
}

// route decodes a held message and queues it on its chat's lane, or acks
// it at once when the endpoint did not subscribe to it.
func (s *session) route(seq uint64, msg jetstream.Msg) {
	it, wanted, err := s.h.src.decode(s.h, msg.Data())
	if err != nil {
		s.h.log.Warn("webhook: an undecodable stream message; skipped", "seq", seq, "err", err)
		s.drop(seq)
		return
	}
	if !wanted {
		s.release(seq, true)
		return
	}
	it.seq = seq
	select {
	case s.lanes[laneOf(it.chat, len(s.lanes))] <- it:
	case <-s.ctx.Done():
		s.release(seq, false)
	}
}

func laneOf(chat string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(chat))
	return int(h.Sum32() % uint32(n))
}

// work posts one lane's events in order: the next only after the previous
// was delivered or set aside (per-chat order, docs/integrations.md).
func (s *session) work(lane <-chan item) {
	for it := range lane {
		s.release(it.seq, s.h.deliver(s.ctx, it))
	}
}

// drop terminates a held message that can never be delivered.
func (s *session) drop(seq uint64) {
	s.mu.Lock()
	msg := s.held[seq]
	delete(s.held, seq)
	s.mu.Unlock()
	if msg != nil {
		msg.Term() //nolint:errcheck // nothing to deliver either way
	}
}

// release acks a finished event, or naks one given back on stop.
func (s *session) release(seq uint64, done bool) {
	s.mu.Lock()
	msg := s.held[seq]
	delete(s.held, seq)
	s.mu.Unlock()
	if msg == nil {
		return
	}
	if done {
		msg.Ack() //nolint:errcheck // a lost ack redelivers it: a duplicate with the same webhook-id
	} else {
		msg.Nak() //nolint:errcheck // a lost nak redelivers it after the ack wait
	}
}

// keepAlive tells JetStream the held events are being worked on, so their
// ack wait does not run out while a lane retries an earlier one, and
// reports the endpoint's lag.
func (s *session) keepAlive() {
	t := time.NewTicker(max(s.h.cfg.AckWait/3, 10*time.Millisecond))
	defer t.Stop()
	lag := time.NewTicker(5 * time.Second)
	defer lag.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			for _, m := range s.held {
				m.InProgress() //nolint:errcheck // a lost one may cost a redelivery, which dispatch folds in
			}
			s.mu.Unlock()
		case <-lag.C:
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			if info, err := s.cons.Info(ctx); err == nil {
				s.h.m.lag.Set(float64(info.NumPending + uint64(info.NumAckPending)))
			}
			cancel()
		}
	}
}
