// Package ingest turns client sends into committed history: validation, a
// bounded inbound queue, group commit into PostgreSQL (history and outbox in
// one transaction per batch), the sender's `accepted` strictly after commit
// (G1), and then the hand-off of the committed batch to the fast path.
// It never sees a socket: callers submit a chatd.SendRequest and get a
// chatd.SendResult callback.
package ingest

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
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Committer stores one batch of sends in one transaction. *store.Store
// implements it. A returned error means nothing of the batch was stored.
type Committer interface {
	CommitBatch(ctx context.Context, sends []store.Send) ([]store.Outcome, error)
}

// Defaults of Config, also the flags' defaults (cmd/chatd).
const (
	DefaultQueueSize    = 8000
	DefaultBatchSize    = 128
	DefaultBatchDelay   = 10 * time.Millisecond
	DefaultWorkers      = 4
	DefaultMaxBodyBytes = 4096
)

// Config configures an Ingest. Zero values take the documented defaults.
type Config struct {
	// Store commits batches. Required.
	Store Committer
	// QueueSize bounds the sends Ingest holds between Submit and the end of
	// their commit: queued, waiting behind their chat's committing batch, or
	// in a batch being gathered or committed. A Submit beyond it fails with
	// chatd.ErrOverloaded at once. Zero means DefaultQueueSize.
	QueueSize int
	// BatchSize is the most sends one transaction carries. Zero means
	// DefaultBatchSize.
	BatchSize int
	// BatchDelay is how long a batch waits for more sends after its first.
	// Zero means DefaultBatchDelay. A transaction has a fixed cost in PostgreSQL (its
	// statements, its WAL flush, and the relay round that follows it), so
	// below BatchSize/BatchDelay sends a second, where the window and not
	// the size closes a batch, the window sets what a message costs; the
	// measured trade-off is in docs/operations.md ("Tuning the group
	// commit").
	BatchDelay time.Duration
	// Workers is how many batches may commit concurrently; batches
	// committing at once never share a chat (see dispatcher). Zero means
	// DefaultWorkers.
	Workers int
	// MaxBodyBytes bounds a message body. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int
	// MaxEnvelopeBytes bounds a message's encoded stream envelope
	// (codec.EnvelopeSize), checked in the committing transaction
	// against the chat's members: over it a send fails with
	// chatd.ErrTooLarge and nothing is stored. The node sets it to NATS's
	// max payload less room for headers, because a message the broker
	// refuses would stop the relay for every chat. New refuses a
	// MaxBodyBytes whose worst case cannot fit even a 2-member chat.
	// Zero means unchecked.
	MaxEnvelopeBytes int
	// CommitTimeout bounds one batch's transaction. Zero means 10 s.
	CommitTimeout time.Duration
	// OnCommit receives each committed batch's new (non-duplicate) messages
	// after every sender was answered: the fast path and the relay's wake-up.
	// It runs on the commit worker and must not block for long. Nil: no hook.
	OnCommit func([]store.Accepted)
	// Now is the clock for message timestamps. Nil means time.Now.
	Now func() time.Time
	// Logger receives commit failures. Nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the ingest metrics. Nil means no metrics are registered.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.Store == nil {
		return errors.New("ingest: Config.Store is required")
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchDelay <= 0 {
		c.BatchDelay = DefaultBatchDelay
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if err := c.checkEnvelopeFits(); err != nil {
		return err
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = 10 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// checkEnvelopeFits refuses a body limit that would let a message to a
// 2-member chat (the smallest with a recipient) exceed the envelope limit:
// such a setting can only produce refusals the client cannot predict.
func (c *Config) checkEnvelopeFits() error {
	if c.MaxEnvelopeBytes <= 0 {
		return nil
	}
	worst := codec.WorstCaseEnvelopeSize(c.MaxBodyBytes, 2)
	if worst <= c.MaxEnvelopeBytes {
		return nil
	}
	fits := (c.MaxEnvelopeBytes - codec.WorstCaseEnvelopeSize(0, 2)) / 6
	if fits < 1 {
		return fmt.Errorf("ingest: the delivery stream takes messages of at most %d bytes, too small for any message: raise the NATS server's max_payload", c.MaxEnvelopeBytes)
	}
	return fmt.Errorf("ingest: a body of %d bytes (--max-body-bytes) can make a %d-byte message on the delivery stream "+
		"(characters JSON escapes take 6 bytes each), over the %d bytes NATS takes less room for headers: "+
		"set --max-body-bytes to at most %d, or raise the NATS server's max_payload",
		c.MaxBodyBytes, worst, c.MaxEnvelopeBytes, fits)
}

// item is one queued send with its answer: done, for a Send its waiter, or
// for a forwarded send forwarded.
type item struct {
	req       chatd.SendRequest
	done      func(chatd.SendResult)
	wait      *waiter // set by Send: the caller may give up before the commit (see shed.go)
	forwarded func(chatd.SendResult, store.Accepted)
	queued    time.Time // when Submit queued it: its batch's gather window starts here
}

// Ingest is the accept path. Safe for concurrent use. Submit may be called
// before Run starts; nothing commits until Run runs.
type Ingest struct {
	cfg   Config
	queue chan item
	// held counts the sends between Submit and the end of their commit,
	// wherever they are (see Config.QueueSize): the one bound on memory.
	held    atomic.Int64
	alarm   *fullAlarm
	metrics *metrics
	log     *slog.Logger
	// sampled logs what can repeat for every batch (a database outage).
	sampled *logsample.Sampler

	mu     sync.RWMutex
	closed bool // set once Run begins draining; guarded by mu
}

// New returns an Ingest; call Run to start committing.
func New(cfg Config) (*Ingest, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "ingest")
	in := &Ingest{
		cfg: cfg,
		// held admits at most QueueSize sends, so the channel never fills.
		queue:   make(chan item, cfg.QueueSize),
		alarm:   newFullAlarm(),
		log:     log,
		sampled: logsample.New(log, logsample.Config{}),
	}
	in.metrics = newMetrics(cfg.Registerer, func() float64 { return float64(in.held.Load()) })
	return in, nil
}

// MaxBodyBytes is the body limit in force (for the gateway's hello).
func (in *Ingest) MaxBodyBytes() int { return in.cfg.MaxBodyBytes }

// Submit checks req (chatd.SendRequest.Check against Config.MaxBodyBytes:
// the one validation every path to the store goes through) and queues it
// without blocking. It returns an error wrapping chatd.ErrInvalid or
// chatd.ErrTooLarge for bad input,
// chatd.ErrOverloaded when Ingest already holds QueueSize sends and
// chatd.ErrClosed once shutdown began; then done is never called. Otherwise
// done is called exactly once, from a commit worker, after the send's batch
// committed or failed; done must not block.
func (in *Ingest) Submit(req chatd.SendRequest, done func(chatd.SendResult)) error {
	return in.submit(req, done, nil, nil)
}

// SubmitForwarded is Submit for a send another node forwarded (pkg/forward):
// done also gets the accepted message's outbox id and recipients, which
// that node needs for its own fast path and high-water marks.
//
// A forwarded send waits out a gather window here as well as on its own
// node: taken at once, it made this node's batches smaller, and measured
// on a three-node cluster PostgreSQL spent more and the p99 was higher
// (docs/benchmarks-log.md, "One committing node for the cluster").
func (in *Ingest) SubmitForwarded(req chatd.SendRequest, done func(chatd.SendResult, store.Accepted)) error {
	return in.submit(req, nil, nil, done)
}

// submit takes the request and its answer's parts rather than an item:
// every WebSocket session's read goroutine calls it, and an item built by
// the caller made that stack deep enough to double for each of them
// (docs/benchmarks-log.md, "One committing node for the cluster").
func (in *Ingest) submit(req chatd.SendRequest, done func(chatd.SendResult), w *waiter, fwd func(chatd.SendResult, store.Accepted)) error {
	if err := req.Check(in.cfg.MaxBodyBytes); err != nil {
		// A forwarded send is counted by the node that took it from its
		// client, so that the nodes' counters add up to the cluster's sends.
		if fwd == nil {
			in.metrics.rejected.WithLabelValues("invalid").Inc()
		}
		return err
	}
	in.mu.RLock()
	defer in.mu.RUnlock()
	if in.closed {
		return chatd.ErrClosed
	}
	if !in.hold() {
		return in.overloaded(fwd == nil)
	}
	select {
	case in.queue <- item{req: req, done: done, wait: w, forwarded: fwd, queued: time.Now()}:
		in.alarm.queued(len(in.queue))
		return nil
	default: // not reached while held bounds what the channel holds
		in.unhold(1)
		return in.overloaded(fwd == nil)
	}
}

func (in *Ingest) overloaded(counted bool) error {
	if counted {
		in.metrics.rejected.WithLabelValues("overloaded").Inc()
	}
	return fmt.Errorf("ingest holds %d sends (queue size): %w", in.cfg.QueueSize, chatd.ErrOverloaded)
}

// Run commits batches until ctx is done, then stops taking sends, commits
// everything already queued (bounded by CommitTimeout per batch) and returns
// once every worker has exited.
func (in *Ingest) Run(ctx context.Context) error {
	defer in.sampled.Flush()
	work := make(chan *flight)
	done := make(chan *flight, in.cfg.Workers)
	var wg sync.WaitGroup
	for i := 0; i < in.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			newWorker(in).loop(work, done)
		}()
	}
	stopped := make(chan struct{})
	d := newDispatcher(in.queue, in.alarm, in.cfg.BatchSize, in.cfg.BatchDelay, in.cfg.Workers, work, done)
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.run(ctx, stopped)
	}()
	<-ctx.Done()
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
	// Nothing is queued after closed is set (Submit holds the read lock
	// while it queues): the dispatcher now commits what is left and stops.
	close(stopped)
	wg.Wait()
	return nil
}
