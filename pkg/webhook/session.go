package webhook

import (
	"context"
	"hash/fnv"
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

// item is an event on its way to the endpoint.
type item struct {
	seq   uint64
	event *chatd.Envelope
	body  []byte
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

// stop ends the session: the lanes give what they hold back to the stream
// (nak, so the next deliverer gets it at once, in order) and stop.
func (s *session) stop() {
	s.cancel()
	for _, l := range s.lanes {
		close(l)
	}
	s.wg.Wait()
}

// dispatch routes one stream message to its chat's lane. A lane full
// blocks the consume: back-pressure within MaxAckPending.
func (s *session) dispatch(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		s.h.sampled.Warn("webhook: a stream message without metadata; dropped", "err", err)
		msg.Term() //nolint:errcheck // nothing to deliver either way
		return
	}
	seq := meta.Sequence.Stream
	s.mu.Lock()
	_, dup := s.held[seq]
	if dup {
		// A redelivery of an event a lane holds (its keep-alive came late):
		// the lane will ack it; acks go to this newest delivery.
		s.held[seq] = msg
	}
	s.mu.Unlock()
	if dup {
		return
	}
	e, err := chatd.DecodeEnvelope(msg.Data())
	if err != nil {
		s.h.log.Warn("webhook: an undecodable stream message; skipped", "seq", seq, "err", err)
		msg.Term() //nolint:errcheck // as above
		return
	}
	if !s.h.wants(&e) {
		msg.Ack() //nolint:errcheck // a lost ack redelivers it, to be skipped again
		return
	}
	p := NewPayload(&e)
	body, err := p.Encode()
	if err != nil {
		s.h.log.Warn("webhook: cannot encode the payload; skipped", "seq", seq, "err", err)
		msg.Term() //nolint:errcheck // as above
		return
	}
	s.mu.Lock()
	s.held[seq] = msg
	s.mu.Unlock()
	select {
	case s.lanes[laneOf(e.Message.Chat, len(s.lanes))] <- item{seq: seq, event: &e, body: body}:
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
