package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/chatd/chatd/pkg/store"
)

// ReadCommitter stores a batch of read receipts in one transaction.
// *store.Store implements it.
type ReadCommitter interface {
	MarkReadBatch(ctx context.Context, marks []store.ReadMark) ([]store.ReadResult, error)
}

// Defaults of ReadsConfig, also the flags' defaults (cmd/chatd).
const (
	DefaultReadBatchSize  = 64
	DefaultReadBatchDelay = 10 * time.Millisecond
)

// ReadsConfig configures Reads. Zero values take the defaults.
type ReadsConfig struct {
	// Store commits batches. Required.
	Store ReadCommitter
	// BatchSize is the most receipts one transaction carries. Zero means
	// DefaultReadBatchSize.
	BatchSize int
	// BatchDelay is how long a batch waits for more after its first. Zero
	// means DefaultReadBatchDelay.
	BatchDelay time.Duration
	// QueueSize bounds waiting receipts; beyond it MarkRead fails with
	// chatd.ErrOverloaded. Zero means 8000.
	QueueSize int
	// CommitTimeout bounds one batch's transaction. Zero means 10 s.
	CommitTimeout time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Reads is the group commit of read state: receipts from every connection
// are gathered for up to BatchDelay (or BatchSize) and stored in one
// transaction, so a burst of read receipts costs one fsync, not one each.
// Safe for concurrent use.
type Reads struct {
	cfg   ReadsConfig
	queue chan readReq
	log   *slog.Logger
	// sampled logs what can repeat for every batch (a database outage).
	sampled *logsample.Sampler

	mu     sync.RWMutex
	closed bool // guarded by mu
}

type readReq struct {
	mark   store.ReadMark
	done   chan store.ReadResult // 1-buffered
	queued time.Time             // its batch's gather window starts here
}

// NewReads returns a Reads; call Run.
func NewReads(cfg ReadsConfig) (*Reads, error) {
	if cfg.Store == nil {
		return nil, errors.New("ingest: ReadsConfig.Store is required")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultReadBatchSize
	}
	if cfg.BatchDelay <= 0 {
		cfg.BatchDelay = DefaultReadBatchDelay
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 8000
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("component", "reads")
	return &Reads{cfg: cfg, queue: make(chan readReq, cfg.QueueSize), log: log, sampled: logsample.New(log, logsample.Config{})}, nil
}

// MarkRead queues a receipt and waits for its batch to commit. It returns
// the read position now stored (the newer one when upto is older), a
// per-receipt error (chatd.ErrForbidden, chatd.ErrNotFound),
// chatd.ErrOverloaded when the queue is full, chatd.ErrClosed after
// shutdown, or ctx's error.
func (r *Reads) MarkRead(ctx context.Context, user, chat, upto string) (chatd.ReadPosition, error) {
	req := readReq{mark: store.ReadMark{User: user, Chat: chat, Upto: upto}, done: make(chan store.ReadResult, 1), queued: time.Now()}
	if err := r.enqueue(req); err != nil {
		return chatd.ReadPosition{}, err
	}
	select {
	case res := <-req.done:
		return res.ReadPosition, res.Err
	case <-ctx.Done():
		return chatd.ReadPosition{}, ctx.Err()
	}
}

func (r *Reads) enqueue(req readReq) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return chatd.ErrClosed
	}
	select {
	case r.queue <- req:
		return nil
	default:
		return fmt.Errorf("read receipt queue full (%d): %w", r.cfg.QueueSize, chatd.ErrOverloaded)
	}
}

// Run commits batches until ctx is done, then refuses new receipts, commits
// those already queued and returns.
func (r *Reads) Run(ctx context.Context) error {
	defer r.sampled.Flush()
	g := newGatherer(r.queue, r.cfg.BatchSize, r.cfg.BatchDelay)
	batch := make([]readReq, 0, r.cfg.BatchSize)
	for {
		select {
		case <-ctx.Done():
			r.mu.Lock()
			r.closed = true
			r.mu.Unlock()
			// Commit what is already queued, batch by batch.
			for batch = g.queued(batch[:0]); len(batch) > 0; batch = g.queued(batch[:0]) {
				r.commit(batch)
			}
			return nil
		case req := <-r.queue:
			batch = g.fill(ctx, append(batch[:0], req), req.queued)
			r.commit(batch)
		}
	}
}

func (r *Reads) commit(batch []readReq) {
	marks := make([]store.ReadMark, len(batch))
	for i, req := range batch {
		marks[i] = req.mark
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CommitTimeout)
	res, err := r.cfg.Store.MarkReadBatch(ctx, marks)
	cancel()
	if err != nil {
		r.sampled.Warn("commit read receipts failed", "receipts", len(batch), "err", err)
		failed := store.ReadResult{Err: fmt.Errorf("store read state: %v: %w", err, chatd.ErrUnavailable)}
		for _, req := range batch {
			req.done <- failed
		}
		return
	}
	for i, req := range batch {
		req.done <- res[i]
	}
}
