package stream

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd/internal/jsonfast"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errAckTimeout is a publish that got no answer within the publish
// timeout: a stream leader election, a lost reply or a cut link. It is
// transient, and counts toward stepping down.
var errAckTimeout = errors.New("no publish ack within the publish timeout")

// errPending marks a publish of the round that has not been answered yet.
var errPending = errors.New("publish ack pending")

// publisher publishes the relay's rounds to JetStream and collects their
// acknowledgements. The relay has its own instead of using jetstream's
// PublishMsgAsync, which costs per message a future with two channels, a
// timer, a map entry, a closure per option and a reflective decode of the
// ack: a large share of chatd's allocations per message
// (docs/benchmarks-log.md, "The relay's own
// publisher, fewer allocations per message, and the foreign keys checked
// per statement (2026-12-02)"). A round needs none of that:
// it publishes in order, waits for every answer under one deadline, then
// reads the answers in order.
//
// On the wire it is JetStream's publish as the library does it: a core
// NATS publish with the Nats-Msg-Id header and a reply subject, answered on
// that subject by the stream with a PubAck or an API error, or by the
// server with a 503 status when nothing serves the subject.
//
// Reply subjects are the same for every round: prefix + index. A subject
// new to the server misses its subject caches (the publishing client's and
// the account's), costing a match through the subscription tree and a cache
// entry evicted later; a new subject per publish made every publish slower
// and allocate more (BenchmarkPublishRound; docs/benchmarks-log.md, "The relay's reply subjects, per-frame counters,
// plain-ASCII escaping (2026-12-03, 10:36–12:12 UTC)"). An answer can only
// be mistaken for a later round's if it comes after its round ended,
// which only a round with unanswered publishes allows: such a round
// retires the prefix (a new subscription under a new inbox), so a late
// answer finds no subscriber or fails the prefix check in handle.
//
// One goroutine (the relay's) calls begin, publish, wait and close; the
// reply handler runs on the subscription's goroutine, which close ends.
type publisher struct {
	nc    *nats.Conn
	sub   *nats.Subscription // nil until the first round, after close and after a round left answers due
	msg   nats.Msg           // reused: PublishMsg copies it into the connection's buffer
	reply []byte             // reused to build reply subjects

	mu      sync.Mutex
	prefix  string    // reply subjects are prefix + index; set with sub
	current *pubRound // the round awaiting answers; nil between rounds
}

// pubRound is one round's publishes and, once answered, their outcomes.
type pubRound struct {
	errs    []error // by publish index: nil acknowledged, errPending unanswered
	sent    int     // publishes that went out (an answer is due for each)
	settled int     // answers recorded
	ended   bool    // wait has begun: no more publishes
	done    chan struct{}
}

func newPublisher(nc *nats.Conn) *publisher {
	return &publisher{nc: nc, msg: nats.Msg{Header: nats.Header{jetstream.MsgIDHeader: make([]string, 1)}}}
}

// begin starts a round of at most n publishes. The previous round ended in
// wait, which retired its prefix if answers were still due to it, so none
// can be taken for this round's.
func (p *publisher) begin(n int) (*pubRound, error) {
	if p.sub == nil {
		prefix := p.nc.NewInbox() + "."
		p.mu.Lock()
		p.prefix = prefix // set before the subscription can deliver
		p.mu.Unlock()
		sub, err := p.nc.Subscribe(prefix+"*", p.handle)
		if err != nil {
			return nil, err
		}
		p.sub = sub
	}
	rd := &pubRound{errs: make([]error, n), done: make(chan struct{})}
	for i := range rd.errs {
		rd.errs[i] = errPending
	}
	p.mu.Lock()
	p.current = rd
	p.mu.Unlock()
	return rd, nil
}

// publish sends data to subject with msgID as its Nats-Msg-Id, as publish
// i of the round (the next index after the previous call). An error means
// it did not go out (too big for the server, bad subject, connection
// closed), and is also the publish's outcome.
func (p *publisher) publish(rd *pubRound, i int, subject, msgID string, data []byte) error {
	p.mu.Lock()
	p.reply = strconv.AppendInt(append(p.reply[:0], p.prefix...), int64(i), 10)
	// Counted before the publish: its answer can come before PublishMsg
	// returns, and finds sent covering it.
	rd.sent++
	p.mu.Unlock()
	p.msg.Subject, p.msg.Reply, p.msg.Data = subject, string(p.reply), data
	p.msg.Header[jetstream.MsgIDHeader][0] = msgID
	err := p.nc.PublishMsg(&p.msg)
	if err != nil {
		p.mu.Lock()
		rd.sent--
		rd.errs[i] = err
		p.mu.Unlock()
	}
	return err
}

// fail records err as the outcome of publish i of the round, which was not
// handed to publish (its envelope could not be encoded).
func (p *publisher) fail(rd *pubRound, i int, err error) {
	p.mu.Lock()
	rd.errs[i] = err
	p.mu.Unlock()
}

// wait ends the round's publishing and returns every publish's outcome
// once all are answered, timeout passed (errAckTimeout for those still
// unanswered) or ctx is done (its error for them). The round is over when
// it returns: later answers are ignored.
func (p *publisher) wait(ctx context.Context, rd *pubRound, timeout time.Duration) []error {
	p.mu.Lock()
	rd.ended = true
	p.closeIfAnsweredLocked(rd)
	p.mu.Unlock()
	var late error
	t := time.NewTimer(timeout)
	select {
	case <-rd.done:
	case <-t.C:
		late = errAckTimeout
	case <-ctx.Done():
		late = ctx.Err()
	}
	t.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == rd {
		p.current = nil
	}
	if late != nil {
		for i, err := range rd.errs {
			if err == errPending {
				rd.errs[i] = late
			}
		}
		// Answers may still come for this round: its subjects retire, so
		// the next round's publishes at the same indexes cannot take them.
		p.retireLocked()
	}
	return rd.errs
}

// retireLocked drops the reply subscription; the next round subscribes
// under a new prefix. Unsubscribe only sends a protocol line, so it is
// safe under p.mu (handle, which also takes p.mu, is not waited for).
func (p *publisher) retireLocked() {
	if p.sub != nil {
		_ = p.sub.Unsubscribe()
		p.sub = nil
	}
	p.prefix = ""
}

// closeIfAnsweredLocked closes rd.done when the round has ended and every
// publish that went out is answered. That moment comes exactly once.
func (p *publisher) closeIfAnsweredLocked(rd *pubRound) {
	if rd.ended && rd.settled == rd.sent {
		close(rd.done)
	}
}

// pending is how many publishes of the current round await their answer.
func (p *publisher) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == nil {
		return 0
	}
	return p.current.sent - p.current.settled
}

// close drops the reply subscription (ending its goroutine) and fails
// nothing: a round always ends in wait, on the caller's goroutine.
func (p *publisher) close() {
	p.mu.Lock()
	p.retireLocked()
	p.mu.Unlock()
}

// handle records the answer to one publish of the current round.
func (p *publisher) handle(m *nats.Msg) {
	outcome := answer(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prefix == "" || !strings.HasPrefix(m.Subject, p.prefix) {
		return // to a retired prefix: a round that ended unanswered
	}
	index, err := strconv.Atoi(m.Subject[len(p.prefix):])
	rd := p.current
	if err != nil || rd == nil || index < 0 || index >= len(rd.errs) || rd.errs[index] != errPending {
		return // not an index, between rounds, or a second answer
	}
	rd.errs[index] = outcome
	rd.settled++
	p.closeIfAnsweredLocked(rd)
}

// answer is a publish's outcome from its reply: nil for a PubAck (a
// duplicate included: the message is in the stream), the stream's
// *jetstream.APIError for a refusal, jetstream.ErrNoStreamResponse when
// nothing serves the subject, jetstream.ErrInvalidJSAck for anything else.
// These are the errors PublishMsgAsync gives, so permanent and transient
// read them as before.
func answer(m *nats.Msg) error {
	if len(m.Data) == 0 {
		if m.Header.Get("Status") == "503" {
			return jetstream.ErrNoStreamResponse
		}
		return jetstream.ErrInvalidJSAck
	}
	if ok, known := fastPubAck(m.Data); known {
		if ok {
			return nil
		}
		return jetstream.ErrInvalidJSAck
	}
	var pa struct {
		Error  *jetstream.APIError `json:"error"`
		Stream string              `json:"stream"`
	}
	switch err := json.Unmarshal(m.Data, &pa); {
	case err != nil:
		return jetstream.ErrInvalidJSAck
	case pa.Error != nil:
		return pa.Error
	case pa.Stream == "":
		return jetstream.ErrInvalidJSAck
	}
	return nil
}

// fastPubAck reads the PubAck every successful publish gets,
// {"stream":"NAME","seq":N} with "duplicate" and "domain" when they apply,
// without reflection. known is false for any other text (an error among
// them), which answer leaves to encoding/json; ok is whether it names a
// stream.
func fastPubAck(data []byte) (ok, known bool) {
	p := jsonfast.NewParser(data)
	stream := false
	parsed := p.Object(func(key []byte) bool {
		switch string(key) {
		case "stream":
			s, ok := p.Quoted()
			stream = ok && len(s) > 2
			return ok
		case "domain":
			_, ok := p.Quoted()
			return ok
		case "seq":
			_, ok := p.Int64()
			return ok
		case "duplicate":
			_, ok := p.Bool()
			return ok
		}
		return false
	}) && p.End()
	return stream, parsed
}
