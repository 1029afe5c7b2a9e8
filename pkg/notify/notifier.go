package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/elect"
	"github.com/chatd/chatd/internal/heldack"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Notifier decides who is notified. Run it on every node: one at a time
// notifies, the others stand by.
type Notifier struct {
	cfg     Config
	log     *slog.Logger
	sampled *logsample.Sampler
	m       *metrics
}

// New checks cfg and returns a Notifier and the Recorder every node runs
// beside it; call Run on both.
func New(cfg Config) (*Notifier, *Recorder, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, nil, err
	}
	log := cfg.Logger.With("component", "notify")
	m := newMetrics(cfg.Registerer)
	n := &Notifier{cfg: cfg, log: log, sampled: logsample.New(log, logsample.Config{}), m: m}
	return n, newRecorder(&n.cfg, log, m), nil
}

// A pull's batch, expiry and heartbeat, as the webhooks' (pkg/webhook).
const (
	pullBatch     = 256
	pullExpiry    = 10 * time.Second
	pullHeartbeat = time.Second
	// flushMargin is how long after a recorder's flush its positions are
	// taken as written.
	flushMargin = 250 * time.Millisecond
	// maxHeld bounds the messages a notifier holds undecided; at the bound
	// JetStream stops delivering until windows end.
	maxHeld = 1 << 16
)

// Run makes sure the consumer exists (on every node, so messages are kept
// for it from the first start), then notifies while this node holds the
// election, until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	defer n.sampled.Flush()
	elect.Run(ctx, elect.Config{
		What: "notifier", Name: ConsumerName, TryLock: n.cfg.Store.TryLock, Standby: n.cfg.Standby,
		Prepare: func(ctx context.Context) error { _, err := n.consumer(ctx); return err },
		Lead:    n.consume,
		Leading: func(on bool) {
			if on {
				n.m.leading.Set(1)
			} else {
				n.m.leading.Set(0)
			}
		},
		Log: n.log, Warn: n.sampled.Warn,
	})
	return nil
}

// EnsureStream creates or updates the notification stream. The node calls
// it before the webhooks start, which consume it.
func (n *Notifier) EnsureStream(ctx context.Context) error {
	_, err := n.cfg.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        n.cfg.Out,
		Description: "chatd offline notifications, for the webhooks",
		Subjects:    []string{n.cfg.SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    n.cfg.Replicas,
		// An endpoint down longer than this misses notifications, which
		// are stale by then anyway; messages stay in history.
		MaxAge: 24 * time.Hour,
		// The notifier publishes a window again when it restarts before
		// acking it: the id drops the copy.
		Duplicates: 5 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("notification stream %s: %w", n.cfg.Out, err)
	}
	return nil
}

func (n *Notifier) consumer(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := n.cfg.JS.CreateOrUpdateConsumer(ctx, n.cfg.Stream, jetstream.ConsumerConfig{
		Durable:       ConsumerName,
		Description:   "chatd offline notifications",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       n.cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: maxHeld,
		// Gone with the configuration that asked for it, so it stops
		// holding the stream's purge floor.
		InactiveThreshold: 26 * time.Hour,
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		FilterSubject:     n.cfg.Filter,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", ConsumerName, err)
	}
	return cons, nil
}

// consume runs one pull of the consumer: a goroutine takes messages, this
// one owns the windows and decides them as they end.
func (n *Notifier) consume(ctx context.Context) error {
	cons, err := n.consumer(ctx)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(pullBatch),
		jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat))
	if err != nil {
		return fmt.Errorf("consume %s: %w", ConsumerName, err)
	}
	in := make(chan jetstream.Msg, pullBatch)
	pulled := make(chan error, 1)
	go func() {
		defer close(in)
		pulled <- n.pull(ctx, it, in)
	}()
	s := &state{n: n, ws: newWindows(n.cfg.After), held: map[uint64]*held{}}
	defer func() {
		it.Stop()
		for msg := range in { // the puller's last: back to the stream too
			msg.Nak() //nolint:errcheck // a lost nak redelivers it after the ack wait
		}
		s.giveBack()
	}()
	tick := time.NewTicker(max(min(n.cfg.After/4, 250*time.Millisecond), 10*time.Millisecond))
	defer tick.Stop()
	alive := time.NewTicker(heldack.Every(n.cfg.AckWait))
	defer alive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-in:
			if !ok {
				return <-pulled
			}
			s.take(msg)
		case <-tick.C:
			s.decide(ctx)
		case <-alive.C:
			s.keepAlive()
		}
	}
}

// pull feeds in until ctx ends or the consume fails.
func (n *Notifier) pull(ctx context.Context, it jetstream.MessagesContext, in chan<- jetstream.Msg) error {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		switch {
		case err == nil:
			select {
			case in <- msg:
			case <-ctx.Done():
				return nil
			}
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return errors.New("the consume stopped")
		case errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound):
			return fmt.Errorf("consume %s: %w", ConsumerName, err)
		default:
			n.sampled.Warn("reading notifications from the stream failed; pulling again, they wait meanwhile (check NATS)", "consumer", ConsumerName, "err", err)
			elect.Sleep(ctx, 50*time.Millisecond)
		}
	}
}

// state is one consume's windows and the messages they hold.
type state struct {
	n    *Notifier
	ws   *windows
	held map[uint64]*held // by stream sequence
}

// take puts a delivery-stream message into its recipients' windows, or
// acks it at once when nobody is to be told of it.
func (s *state) take(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		msg.Term() //nolint:errcheck // nothing to decide on
		return
	}
	if h := s.held[meta.Sequence.Stream]; h != nil {
		h.reply = msg.Reply() // redelivered while held: acks go to the newest delivery
		return
	}
	env, err := codec.DecodeEnvelope(msg.Data())
	if err != nil {
		s.n.sampled.Warn("notifier: an undecodable stream message; skipped", "seq", meta.Sequence.Stream, "err", err)
		msg.Ack() //nolint:errcheck // nothing to decide on
		return
	}
	if env.Message.Kind.Normal() != chatd.EventMessage {
		msg.Ack() //nolint:errcheck // a lost ack redelivers it, to be skipped again
		return
	}
	h := &held{reply: msg.Reply(), m: s.n.kept(&env.Message), seq: meta.Sequence.Stream,
		since: heldack.Since(meta.Timestamp, s.n.cfg.Now())}
	if !s.ws.add(h, env.Recipients) {
		msg.Ack() //nolint:errcheck // as above
		return
	}
	s.held[h.seq] = h
	s.n.m.held.Set(float64(len(s.held)))
}

// decide settles the windows that ended: who is still behind gets a
// notification. A window is decided once the acks made before its end
// reached PostgreSQL (a recorder's flush and a margin later). Windows it
// could not settle (PostgreSQL or NATS failed) are tried again next tick,
// their messages still held.
func (s *state) decide(ctx context.Context) {
	due := s.ws.due(s.n.cfg.Now().Add(-s.n.cfg.FlushEvery - flushMargin))
	if len(due) == 0 {
		return
	}
	failed, err := s.n.notify(ctx, due)
	if err != nil {
		s.n.sampled.Warn("notifier: deciding windows failed; retrying", "windows", len(due), "err", err)
	}
	s.ws.requeue(failed)
	for _, w := range due {
		if len(failed) > 0 && containsWindow(failed, w) {
			continue
		}
		for _, h := range w.done() {
			s.ack(h, ackDone) // a lost ack redelivers it: the same notification id, dropped as a duplicate
			delete(s.held, h.seq)
		}
	}
	s.n.m.held.Set(float64(len(s.held)))
}

func containsWindow(ws []*window, w *window) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// keepAlive tells JetStream that the messages held long enough (heldack)
// are being worked on. Most messages are decided within After of their
// window and never need it.
func (s *state) keepAlive() {
	now := s.n.cfg.Now()
	for _, h := range s.held {
		if heldack.Due(h.since, now, s.n.cfg.AckWait) {
			s.ack(h, ackProgress) // a lost one costs a redelivery, which take folds in
		}
	}
}

// JetStream's acknowledgements, published to a delivery's reply subject
// as jetstream.Msg's Ack, InProgress and Nak publish them.
var (
	ackDone     = []byte("+ACK")
	ackProgress = []byte("+WPI")
	ackNak      = []byte("-NAK")
)

// ack sends h's newest delivery an acknowledgement. A lost one costs a
// redelivery at worst, which take folds into what it holds.
func (s *state) ack(h *held, token []byte) {
	if h.reply == "" {
		return
	}
	if nc := s.n.cfg.JS.Conn(); nc != nil {
		nc.Publish(h.reply, token) //nolint:errcheck // as above
	}
}

// kept is what of m a held message keeps (held.m).
func (n *Notifier) kept(m *chatd.Message) chatd.Message {
	k := chatd.Message{ID: m.ID, Chat: m.Chat, From: m.From, Seq: m.Seq, TS: m.TS}
	if n.cfg.Preview == PreviewText {
		k.Body = strings.Clone(preview(m.Body))
	}
	return k
}

// giveBack returns the held messages to the stream for the next notifier.
func (s *state) giveBack() {
	for _, h := range s.held {
		s.ack(h, ackNak) // a lost nak redelivers it after the ack wait
	}
	s.n.m.held.Set(0)
	if nc := s.n.cfg.JS.Conn(); nc != nil && nc.IsConnected() {
		nc.FlushTimeout(time.Second) //nolint:errcheck // as above
	}
}

// notify decides windows: it reads how far each member got, counts unread
// for those behind and publishes their notifications. It returns the
// windows left undecided.
func (n *Notifier) notify(ctx context.Context, due []*window) ([]*window, error) {
	users, chats := make([]string, len(due)), make([]string, len(due))
	for i, w := range due {
		users[i], chats[i] = w.user, w.chat
	}
	reached, err := n.cfg.Store.Reached(ctx, users, chats)
	if err != nil {
		return due, err
	}
	var out []chatd.Notification
	var outWin []*window
	var behind []string
	for i, w := range due {
		count, newest := w.behind(reached[i])
		if count == 0 {
			n.m.skipped.Inc()
			continue
		}
		out = append(out, n.notification(w, count, newest))
		outWin = append(outWin, w)
		behind = append(behind, w.user)
	}
	if len(out) == 0 {
		return nil, nil
	}
	unread, err := n.cfg.Store.Unread(ctx, behind)
	if err != nil {
		return due, err
	}
	var failed []*window
	var firstErr error
	futures := make([]jetstream.PubAckFuture, len(out))
	for i := range out {
		nt := &out[i]
		nt.Unread = unread[nt.User][nt.Chat]
		for _, c := range unread[nt.User] {
			nt.UnreadTotal += c
		}
		futures[i], err = n.publish(nt)
		if err != nil {
			failed, firstErr = append(failed, outWin[i]), cmpErr(firstErr, err)
		}
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case <-f.Ok():
			n.m.notified.Inc()
		case err := <-f.Err():
			failed, firstErr = append(failed, outWin[i]), cmpErr(firstErr, err)
		case <-ctx.Done():
			failed = append(failed, outWin[i])
		}
	}
	return failed, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// notification is w's notification, naming its newest message behind.
func (n *Notifier) notification(w *window, count int, newest *held) chatd.Notification {
	first := w.items[0].m.ID
	u := sha256.Sum256([]byte(w.user))
	nt := chatd.Notification{
		ID: "ntf_" + first + "_" + hex.EncodeToString(u[:6]), User: w.user, Chat: w.chat,
		MessageID: newest.m.ID, Seq: newest.m.Seq, Count: count, TS: newest.m.TS,
	}
	switch n.cfg.Preview {
	case PreviewText:
		nt.Text = newest.m.Body // cut to the preview when taken
		fallthrough
	case PreviewSender:
		nt.Sender = newest.m.From
	}
	return nt
}

// preview is the start of a body, at most PreviewRunes runes, cut with an
// ellipsis.
func preview(body string) string {
	if utf8.RuneCountInString(body) <= PreviewRunes {
		return body
	}
	i, r := 0, 0
	for i = range body {
		if r == PreviewRunes-1 {
			break
		}
		r++
	}
	return body[:i] + "…"
}

func (n *Notifier) publish(nt *chatd.Notification) (jetstream.PubAckFuture, error) {
	data, err := json.Marshal(nt)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: n.cfg.SubjectPrefix + nt.Chat, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, nt.ID)
	return n.cfg.JS.PublishMsgAsync(msg)
}
