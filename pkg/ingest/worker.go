package ingest

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
	"github.com/oklog/ulid/v2"
)

// worker gathers the sends of its shard into batches and commits them.
// Each worker owns its queue, its buffers and its ULID entropy
// (ulid.Monotonic is not safe for concurrent use), so workers share nothing.
type worker struct {
	in      *Ingest
	queue   <-chan item
	entropy io.Reader
	batch   []item
	sends   []store.Send
	fresh   []store.Accepted
	gather  *gatherer[item]
}

func newWorker(in *Ingest, queue <-chan item) *worker {
	return &worker{
		in:      in,
		queue:   queue,
		entropy: ulid.Monotonic(rand.Reader, 0),
		batch:   make([]item, 0, in.cfg.BatchSize),
		sends:   make([]store.Send, 0, in.cfg.BatchSize),
		gather:  newGatherer(queue, in.cfg.BatchSize, in.cfg.BatchDelay),
	}
}

// loop commits batches until ctx is done, then drains what it can see.
func (w *worker) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			w.drain()
			return
		case it := <-w.queue:
			w.batch = w.gather.fill(ctx, append(w.batch[:0], it), it.queued)
			w.commit()
		}
	}
}

// drain commits everything queued right now, batch by batch.
func (w *worker) drain() {
	for {
		w.batch = w.gather.queued(w.batch[:0])
		if len(w.batch) == 0 {
			return
		}
		w.commit()
	}
}

// commit stores the batch in one transaction and answers every sender:
// accepted only after the commit returned (G1), then the fast-path hook.
func (w *worker) commit() {
	in := w.in
	in.depth.Add(-int64(len(w.batch)))
	in.metrics.queued.Sub(float64(len(w.batch)))
	now := in.cfg.Now().UTC()
	w.sends = w.sends[:0]
	for _, it := range w.batch {
		w.sends = append(w.sends, store.Send{
			ID:     ulid.MustNew(ulid.Timestamp(now), w.entropy).String(),
			Chat:   it.req.Chat,
			From:   it.req.From,
			Device: it.req.Device,
			CID:    it.req.CID,
			Body:   it.req.Body,
			TS:     now,

			MaxEnvelopeBytes: in.cfg.MaxEnvelopeBytes,

			Kind: it.req.Kind, Target: it.req.Target, Meta: it.req.Meta, Emoji: it.req.Emoji, On: it.req.On,
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.cfg.CommitTimeout)
	start := time.Now()
	outcomes, err := in.cfg.Store.CommitBatch(ctx, w.sends)
	cancel()
	in.metrics.commitSeconds.Observe(time.Since(start).Seconds())
	in.metrics.batchSize.Observe(float64(len(w.batch)))
	if err != nil {
		in.metrics.failedBatches.Inc()
		in.sampled.Warn("commit batch failed; senders told to resend", "sends", len(w.batch), "err", err)
		failed := Result{Err: fmt.Errorf("commit: %v: %w", err, chatd.ErrUnavailable)}
		for _, it := range w.batch {
			it.done(failed)
		}
		w.clear()
		return
	}
	w.fresh = w.fresh[:0]
	for i, it := range w.batch {
		o := outcomes[i]
		switch {
		case o.Err != nil:
			in.metrics.rejected.WithLabelValues(rejectLabel(o.Err)).Inc()
			it.done(Result{Err: o.Err})
		case o.Duplicate:
			in.metrics.duplicates.Inc()
			it.done(Result{Message: o.Message, Duplicate: true})
		default:
			in.metrics.accepted.Inc()
			it.done(Result{Message: o.Message})
			w.fresh = append(w.fresh, o.Accepted)
		}
	}
	if len(w.fresh) > 0 && in.cfg.OnCommit != nil {
		in.cfg.OnCommit(w.fresh)
	}
	w.clear()
}

// clear drops references so a finished batch's callbacks and bodies can be
// collected while the worker waits for the next one.
func (w *worker) clear() {
	clear(w.batch)
	w.batch = w.batch[:0]
	clear(w.sends)
	clear(w.fresh)
}
