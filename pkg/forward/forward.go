// Package forward lets a cluster commit every node's sends on one node: the
// node whose relay leads. Each node's ingest still validates, queues and
// gathers its clients' sends into batches; a node whose relay stands by
// sends each batch over NATS to the leading node, which queues its sends
// into its own group commit, so the cluster commits in the fewer, larger
// transactions of a single node, no chat is locked by two nodes' batches at
// once, and the relay is handed every commit in memory instead of reading
// other nodes' rows back from PostgreSQL (docs/benchmarks-log.md, "One
// committing node for the cluster").
//
// Forwarding never decides an outcome by itself: a batch the leading node
// does not answer (none leads, it went away, it timed out, the batch does
// not fit a NATS message) is committed by this node, as without
// forwarding. That is safe even when the leading node did commit it after
// all: a send is idempotent by (sender, cid), so the second commit finds
// the first and answers with it (a duplicate).
package forward

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultTimeout bounds the wait for the leading node's answer before this
// node commits the batch itself.
const DefaultTimeout = 2 * time.Second

// queueGroup keeps a batch with one node when two briefly both lead (one
// lost its lock without noticing yet).
const queueGroup = "commit"

// nodeHeader names the node a batch comes from.
const nodeHeader = "Chatd-Node"

// headerRoom is what a batch's subject, reply subject and node header take
// of NATS's max payload, with room to spare.
const headerRoom = 1024

// errDeclined: the batch reached its own node, which declined it.
var errDeclined = errors.New("the batch came back to its own node")

// Committer commits a batch on this node. *store.Store implements it.
type Committer interface {
	CommitBatch(ctx context.Context, sends []store.Send) ([]store.Outcome, error)
}

// Submitter queues a forwarded send into this node's group commit.
// *ingest.Ingest implements it.
type Submitter interface {
	SubmitForwarded(req chatd.SendRequest, done func(chatd.SendResult, store.Accepted)) error
}

// Config configures a Forwarder.
type Config struct {
	// Conn carries the batches; Subject is where the leading node takes
	// them (one per deployment: see node's naming). Local commits what is
	// not forwarded. All required.
	Conn    *nats.Conn
	Subject string
	Local   Committer
	// NodeID names this node on its batches, so that it declines its own:
	// one sent just as this node took the lead can reach it, and its chats
	// are held by the very batch waiting for the answer.
	NodeID string
	// Timeout bounds the wait for the leading node's answer. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Attach, when set, adds to the header of each batch this node
	// forwards what rides along to the leading node (push's reports), in
	// at most room bytes; Attached, when set, takes it there, with the
	// node the batch came from. What rode a batch that went unanswered may
	// be lost, so it must be something whose loss costs no outcome.
	Attach     func(h nats.Header, room int)
	Attached   func(from string, h nats.Header)
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Forwarder is the ingest's Committer on a node of a cluster: it commits
// locally while this node leads and forwards otherwise, and while this node
// leads it takes the other nodes' batches (Lead). Safe for concurrent use.
type Forwarder struct {
	cfg     Config
	log     *slog.Logger
	sampled *logsample.Sampler
	// Batches by path (chatd_forward_batches_total).
	leadingN, forwardedN, fallbackN, takenN prometheus.Counter

	leading atomic.Bool
	mu      sync.Mutex // guards sub and ingest
	sub     *nats.Subscription
	ingest  Submitter
}

// New returns a Forwarder that commits locally until Lead is called.
func New(cfg Config) (*Forwarder, error) {
	if cfg.Conn == nil || cfg.Subject == "" || cfg.Local == nil {
		return nil, errors.New("forward: Config.Conn, Subject and Local are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("component", "forward")
	batches := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_forward_batches_total",
		Help: "Commit batches by where they committed: here while this node leads (leading), on the leading node (forwarded), here because that node did not answer (fallback), or other nodes' batches taken while leading (taken).",
	}, []string{"path"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(batches); err != nil {
			return nil, fmt.Errorf("forward: register metrics: %w", err)
		}
	}
	return &Forwarder{cfg: cfg, log: log, sampled: logsample.New(log, logsample.Config{}),
		leadingN: batches.WithLabelValues("leading"), forwardedN: batches.WithLabelValues("forwarded"),
		fallbackN: batches.WithLabelValues("fallback"), takenN: batches.WithLabelValues("taken")}, nil
}

// SetIngest sets where the batches taken while leading are queued: this
// node's ingest, which is built with the Forwarder as its committer.
func (f *Forwarder) SetIngest(in Submitter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ingest = in
}

// Lead starts (true) or stops (false) taking the other nodes' batches and
// committing this node's own: call it when this node's relay takes or
// leaves the lead. It never blocks on I/O.
func (f *Forwarder) Lead(leading bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leading.Store(leading)
	if leading && f.sub == nil {
		sub, err := f.cfg.Conn.QueueSubscribe(f.cfg.Subject, queueGroup, f.take)
		if err != nil {
			f.log.Warn("cannot take other nodes' batches; they commit their own", "err", err)
			return
		}
		f.sub = sub
		return
	}
	if !leading && f.sub != nil {
		_ = f.sub.Unsubscribe() // the connection may be closing; its subscriptions go with it
		f.sub = nil
	}
}

// Close stops taking batches.
func (f *Forwarder) Close() {
	f.Lead(false)
	f.sampled.Flush()
}

// CommitBatch commits sends on the leading node, or here while this node
// leads or when that node does not answer.
func (f *Forwarder) CommitBatch(ctx context.Context, sends []store.Send) ([]store.Outcome, error) {
	if f.leading.Load() {
		f.leadingN.Inc()
		return f.cfg.Local.CommitBatch(ctx, sends)
	}
	out, err := f.forward(ctx, sends)
	if err != nil {
		f.fallbackN.Inc()
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, errDeclined) {
			f.sampled.Warn("the leading node did not take a batch; committing it here", "sends", len(sends), "err", err)
		}
		return f.cfg.Local.CommitBatch(ctx, sends)
	}
	f.forwardedN.Inc()
	return f.commitClosed(ctx, sends, out)
}

// forward sends the batch to the leading node and returns its outcomes.
func (f *Forwarder) forward(ctx context.Context, sends []store.Send) ([]store.Outcome, error) {
	req := request{Sends: make([]send, len(sends))}
	for i := range sends {
		req.Sends[i] = sendOf(&sends[i].SendRequest)
	}
	data, err := req.appendJSON(make([]byte, 0, 256*len(sends)))
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	if int64(len(data)) > f.cfg.Conn.MaxPayload() {
		return nil, fmt.Errorf("batch of %d bytes over NATS's max payload", len(data))
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	m := nats.NewMsg(f.cfg.Subject)
	m.Data = data
	m.Header.Set(nodeHeader, f.cfg.NodeID)
	if f.cfg.Attach != nil {
		f.cfg.Attach(m.Header, int(f.cfg.Conn.MaxPayload())-len(data)-headerRoom)
	}
	msg, err := f.cfg.Conn.RequestMsgWithContext(ctx, m)
	if err != nil {
		return nil, err
	}
	if len(msg.Data) == 0 {
		return nil, errDeclined
	}
	rep, err := decodeReply(msg.Data)
	if err != nil {
		return nil, fmt.Errorf("decode the leading node's answer: %w", err)
	}
	if len(rep.Outcomes) != len(sends) {
		return nil, fmt.Errorf("the leading node answered %d of %d sends", len(rep.Outcomes), len(sends))
	}
	out := make([]store.Outcome, len(sends))
	for i := range rep.Outcomes {
		out[i] = rep.Outcomes[i].decode()
	}
	return out, nil
}

// commitClosed commits here the sends the leading node did not queue
// because it was shutting down, or refused with an error it could not
// name; the other outcomes stand.
func (f *Forwarder) commitClosed(ctx context.Context, sends []store.Send, out []store.Outcome) ([]store.Outcome, error) {
	var idx []int
	for i := range out {
		if errors.Is(out[i].Err, chatd.ErrClosed) || errors.Is(out[i].Err, errUnknownKind) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return out, nil
	}
	rest := make([]store.Send, len(idx))
	for j, i := range idx {
		rest[j] = sends[i]
	}
	local, err := f.cfg.Local.CommitBatch(ctx, rest)
	if err != nil {
		failed := fmt.Errorf("commit: %v: %w", err, chatd.ErrUnavailable)
		for _, i := range idx {
			out[i] = store.Outcome{Err: failed}
		}
		return out, nil
	}
	for j, i := range idx {
		out[i] = local[j]
	}
	return out, nil
}

// take is the leading node's handler of another node's batch: it queues
// the sends into this node's group commit in their order, which keeps
// each chat's order, and answers once every one is answered.
func (f *Forwarder) take(msg *nats.Msg) {
	f.mu.Lock()
	in := f.ingest
	f.mu.Unlock()
	from := msg.Header.Get(nodeHeader)
	if from == f.cfg.NodeID {
		_ = msg.Respond(nil) // lost: the node commits the batch itself after its timeout
		return
	}
	if f.cfg.Attached != nil {
		f.cfg.Attached(from, msg.Header)
	}
	req, err := decodeRequest(msg.Data)
	if in == nil || err != nil || len(req.Sends) == 0 {
		// Declined at once rather than left to the sender's timeout: a
		// batch this node cannot read (a node of another version) would
		// otherwise cost every batch of that node the whole wait.
		f.sampled.Warn("declined a batch it cannot read; its node commits it", "err", err, "bytes", len(msg.Data))
		_ = msg.Respond(nil) // lost: the node commits the batch itself after its timeout
		return
	}
	f.takenN.Inc()
	a := &answer{msg: msg, maxPayload: f.cfg.Conn.MaxPayload(), results: make([]result, len(req.Sends)), log: f.sampled}
	a.left.Store(int64(len(req.Sends)))
	for i := range req.Sends {
		err := in.SubmitForwarded(req.Sends[i].request(), func(r chatd.SendResult, acc store.Accepted) { a.set(i, r, acc) })
		if err != nil {
			a.set(i, chatd.SendResult{Err: err}, store.Accepted{})
		}
	}
}

// answer gathers one taken batch's outcomes and replies with them once the
// last is in; set runs on this node's commit workers.
type answer struct {
	msg        *nats.Msg
	maxPayload int64
	results    []result
	left       atomic.Int64
	log        *logsample.Sampler
}

type result struct {
	r   chatd.SendResult
	acc store.Accepted
}

func (a *answer) set(i int, r chatd.SendResult, acc store.Accepted) {
	a.results[i] = result{r: r, acc: acc}
	if a.left.Add(-1) != 0 {
		return
	}
	data := a.encode(true)
	if int64(len(data)) > a.maxPayload {
		// A large group's recipients: the forwarding node's own members
		// then get these messages through the stream, not its fast path.
		data = a.encode(false)
	}
	if int64(len(data)) > a.maxPayload {
		a.log.Warn("cannot answer a forwarded batch over NATS's max payload; its node commits it itself and finds it stored", "bytes", len(data))
		return
	}
	_ = a.msg.Respond(data) // lost: the node commits the batch itself and finds it stored
}

func (a *answer) encode(withRecipients bool) []byte {
	rep := reply{Outcomes: make([]outcome, len(a.results))}
	for i := range a.results {
		rep.Outcomes[i] = encodeOutcome(a.results[i].r, a.results[i].acc, withRecipients)
	}
	return rep.appendJSON(make([]byte, 0, 512*len(rep.Outcomes)))
}
