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

// worker commits the batches the dispatcher hands it. Each worker owns
// its buffers and its ULID entropy (ulid.Monotonic is not safe for
// concurrent use), so workers share nothing.
type worker struct {
	in      *Ingest
	entropy io.Reader
	batch   []item
	sends   []store.Send
	fresh   []store.Accepted
}

func newWorker(in *Ingest) *worker {
	return &worker{
		in:      in,
		entropy: ulid.Monotonic(rand.Reader, 0),
		sends:   make([]store.Send, 0, in.cfg.BatchSize),
	}
}

// loop commits each flight it is handed and hands it back, until work is
// closed.
func (w *worker) loop(work <-chan *flight, done chan<- *flight) {
	for f := range work {
		w.batch = f.items
		w.commit()
		done <- f
	}
}

// commit stores the batch in one transaction and answers every sender:
// accepted only after the commit returned (G1), then the fast-path hook.
// The batch stops counting against the bound before its senders are
// answered, so a sender told to resend finds room for it.
func (w *worker) commit() {
	in := w.in
	w.claimBatch()
	if len(w.batch) == 0 {
		return
	}
	now := in.cfg.Now().UTC()
	w.sends = w.sends[:0]
	for _, it := range w.batch {
		w.sends = append(w.sends, store.Send{
			SendRequest:      it.req,
			ID:               ulid.MustNew(ulid.Timestamp(now), w.entropy).String(),
			TS:               now,
			MaxEnvelopeBytes: in.cfg.MaxEnvelopeBytes,
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.cfg.CommitTimeout)
	start := time.Now()
	outcomes, err := in.cfg.Store.CommitBatch(ctx, w.sends)
	cancel()
	in.metrics.commitSeconds.Observe(time.Since(start).Seconds())
	in.metrics.batchSize.Observe(float64(len(w.batch)))
	in.unhold(len(w.batch))
	if err != nil {
		in.metrics.failedBatches.Inc()
		in.sampled.Warn("commit batch failed; senders told to resend", "sends", len(w.batch), "err", err)
		failed := chatd.SendResult{Err: fmt.Errorf("commit: %v: %w", err, chatd.ErrUnavailable)}
		for _, it := range w.batch {
			it.answer(failed, store.Accepted{})
		}
		w.clear()
		return
	}
	w.fresh = w.fresh[:0]
	for i, it := range w.batch {
		o := outcomes[i]
		// A forwarded send is counted by the node that took it from its
		// client (see submit).
		counted := it.forwarded == nil
		switch {
		case o.Err != nil:
			if counted {
				in.metrics.rejected.WithLabelValues(rejectLabel(o.Err)).Inc()
			}
			it.answer(chatd.SendResult{Err: o.Err}, store.Accepted{})
		case o.Duplicate:
			if counted {
				in.metrics.duplicates.Inc()
			}
			it.answer(chatd.SendResult{Message: o.Message, Duplicate: true}, o.Accepted)
		default:
			if counted {
				in.metrics.accepted.Inc()
			}
			it.answer(chatd.SendResult{Message: o.Message}, o.Accepted)
			w.fresh = append(w.fresh, o.Accepted)
		}
	}
	if len(w.fresh) > 0 && in.cfg.OnCommit != nil {
		in.cfg.OnCommit(w.fresh)
	}
	w.clear()
}

// clear drops references so a finished batch's callbacks and bodies can be
// collected while the worker waits for the next one (the dispatcher clears
// the batch itself).
func (w *worker) clear() {
	w.batch = nil
	clear(w.sends)
	clear(w.fresh)
}
