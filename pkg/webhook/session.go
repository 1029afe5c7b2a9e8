package webhook

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/heldack"
	"github.com/nats-io/nats.go/jetstream"
)

// session is one consume of an endpoint's consumer: the queue and the
// workers that post, the events they hold, and what keeps those alive.
type session struct {
	h      *hook
	cons   jetstream.Consumer
	ctx    context.Context
	cancel context.CancelFunc
	// client posts for the workers; ctx ending abandons its posts.
	client *client
	queue  *queue
	wg     sync.WaitGroup

	mu sync.Mutex
	// held are the stream messages taken and not yet acked, by stream
	// sequence: the latest delivery of each, so that acks and keep-alives
	// go to the delivery JetStream knows of.
	held map[uint64]heldMsg
}

// heldMsg is a delivery the session holds, and about when its ack wait
// began (heldack.Since).
type heldMsg struct {
	msg   jetstream.Msg
	since time.Time
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
	s := &session{h: h, cons: cons, held: map[uint64]heldMsg{}, queue: newQueue(h.cfg.Workers * queuedPerWorker)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	// A connection per worker: each posts one event at a time.
	s.client = newClient(s.ctx, h.cfg, h.ep.URL, h.cfg.Workers)
	for range h.cfg.Workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.work()
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.keepAlive()
	}()
	return s
}

// stop ends the session: the workers stop, and what it holds goes back to
// the stream (nak, so the next deliverer gets it at once).
func (s *session) stop() {
	s.cancel()
	s.queue.close()
	s.wg.Wait()
	s.client.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq, h := range s.held {
		h.msg.Nak() //nolint:errcheck // a lost nak redelivers it after the ack wait
		delete(s.held, seq)
	}
	// The naks (and the workers' last acks) are only buffered: a node that
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
		seq, first, ok := s.hold(msg) // kept alive by keepAlive while gathering
		if !ok {
			continue
		}
		if first {
			seqs = append(seqs, seq)
		}
		if seq <= upto {
			old[seq] = true
		}
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		s.mu.Lock()
		h := s.held[seq]
		s.mu.Unlock()
		s.route(seq, h.msg)
	}
	return true
}

// dispatch routes one stream message to its chat in the queue. A full
// queue blocks the consume: back-pressure within MaxAckPending.
func (s *session) dispatch(msg jetstream.Msg) {
	if seq, first, ok := s.hold(msg); ok && first {
		s.route(seq, msg)
	}
}

// hold records msg as held by its stream sequence, reporting whether it
// is the first delivery held of that event. A redelivery of an event the
// session holds (its keep-alive came late) replaces it: acks go to the
// newest delivery. A message without metadata is dropped (ok false).
func (s *session) hold(msg jetstream.Msg) (seq uint64, first, ok bool) {
	meta, err := msg.Metadata()
	if err != nil {
		s.h.sampled.Warn("webhook: a stream message without metadata; dropped", "err", err)
		msg.Term() //nolint:errcheck // nothing to deliver either way
		return 0, false, false
	}
	seq = meta.Sequence.Stream
	s.mu.Lock()
	defer s.mu.Unlock()
	_, dup := s.held[seq]
	s.held[seq] = heldMsg{msg: msg, since: heldack.Since(meta.Timestamp, time.Now())}
	return seq, !dup, true
}

// route decodes a held message and queues it behind its chat's earlier
// events, or acks it at once when the endpoint did not subscribe to it.
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
	if !s.queue.put(it) {
		s.release(seq, false)
	}
}

// work posts the queue's events, one chat at a time each: a chat's next
// event only after the previous was delivered or set aside (per-chat
// order, docs/integrations.md); a failed one parks its chat for the
// backoff, and the worker takes another chat meanwhile.
func (s *session) work() {
	for {
		l, it, ok := s.queue.next()
		if !ok {
			return
		}
		switch out, w := s.h.attempt(s.ctx, s.client, it, l.attempts+1); out {
		case delivered, setAside:
			s.release(it.seq, true)
			s.queue.done(l, out == delivered, s.h.cfg.MinBackoff)
		case retryLater:
			s.queue.retry(l, w)
		case givenBack:
			return // the session is stopping; stop gives back what is held
		}
	}
}

// drop terminates a held message that can never be delivered.
func (s *session) drop(seq uint64) {
	s.mu.Lock()
	h, ok := s.held[seq]
	delete(s.held, seq)
	s.mu.Unlock()
	if ok {
		h.msg.Term() //nolint:errcheck // nothing to deliver either way
	}
}

// release acks a finished event, or naks one given back on stop.
func (s *session) release(seq uint64, done bool) {
	s.mu.Lock()
	h, ok := s.held[seq]
	delete(s.held, seq)
	s.mu.Unlock()
	if !ok {
		return
	}
	if done {
		h.msg.Ack() //nolint:errcheck // a lost ack redelivers it: a duplicate with the same webhook-id
	} else {
		h.msg.Nak() //nolint:errcheck // a lost nak redelivers it after the ack wait
	}
}

// keepAlive tells JetStream the events held long enough (heldack) are
// being worked on, so their ack wait does not run out while its chat
// retries an earlier one, and reports the endpoint's lag.
func (s *session) keepAlive() {
	t := time.NewTicker(heldack.Every(s.h.cfg.AckWait))
	defer t.Stop()
	lag := time.NewTicker(5 * time.Second)
	defer lag.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			s.mu.Lock()
			for _, h := range s.held {
				if heldack.Due(h.since, now, s.h.cfg.AckWait) {
					h.msg.InProgress() //nolint:errcheck // a lost one may cost a redelivery, which dispatch folds in
				}
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
