package ingest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

// hold counts one more send against QueueSize, or reports false when
// Ingest already holds that many. The count is released by the commit
// worker once the send's transaction ended (or the send was dropped), so
// sends waiting in the dispatcher behind a slow commit count as much as
// those still in the channel: load beyond the bound is refused at once
// instead of piling up in memory.
func (in *Ingest) hold() bool {
	if in.held.Add(1) > int64(in.cfg.QueueSize) {
		in.held.Add(-1)
		return false
	}
	return true
}

func (in *Ingest) unhold(n int) { in.held.Add(-int64(n)) }

// States of a waiter: the caller giving up and the worker taking the send
// into a transaction race for it, and whichever moves it first decides.
const (
	waiting   int32 = iota
	taken           // in a transaction: the caller can no longer withdraw it
	abandoned       // the caller gave up first: the worker drops it unstored
)

// waiter is a Send's answer channel and its claim on the send.
type waiter struct {
	state  atomic.Int32
	result chan chatd.SendResult // buffered 1: the worker never blocks on it
}

// Send submits req and waits for its Result: the blocking form for REST.
// The returned error is Submit's (nothing was queued) or comes from ctx
// ending first, which does not leave the send to commit unseen: if its
// batch had not begun, the send is dropped and the error wraps
// chatd.ErrUnavailable (nothing stored); if its transaction was already
// running, which cannot be recalled, the error wraps chatd.ErrOutcomeUnknown
// (resend with the same cid to learn the outcome). A queued send that failed
// reports its failure in Result.Err.
func (in *Ingest) Send(ctx context.Context, req chatd.SendRequest) (chatd.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return chatd.SendResult{}, fmt.Errorf("send not queued: %w: %w", chatd.ErrUnavailable, err)
	}
	w := &waiter{result: make(chan chatd.SendResult, 1)}
	if err := in.submit(req, nil, w, nil); err != nil {
		return chatd.SendResult{}, err
	}
	select {
	case r := <-w.result:
		return r, nil
	case <-ctx.Done():
	}
	if w.state.CompareAndSwap(waiting, abandoned) {
		in.metrics.rejected.WithLabelValues("abandoned").Inc()
		return chatd.SendResult{}, fmt.Errorf("gave up before the send's batch began, nothing stored: %w: %w", chatd.ErrUnavailable, ctx.Err())
	}
	select {
	case r := <-w.result: // answered meanwhile
		return r, nil
	default:
	}
	return chatd.SendResult{}, fmt.Errorf("gave up while the send's transaction was committing: %w: %w", chatd.ErrOutcomeUnknown, ctx.Err())
}

// answer delivers r to the send's caller; a forwarded send's caller also
// gets acc, the accepted message's outbox id and recipients (zero unless
// r is an acceptance).
func (it *item) answer(r chatd.SendResult, acc store.Accepted) {
	switch {
	case it.wait != nil:
		it.wait.result <- r
	case it.forwarded != nil:
		it.forwarded(r, acc)
	default:
		it.done(r)
	}
}

// claimBatch takes the worker's batch into its transaction: from here no
// caller can withdraw a send of it. Sends whose callers already gave up
// were answered "nothing stored" and are dropped so that stays true; they
// stop counting against the bound at once.
func (w *worker) claimBatch() {
	kept := w.batch[:0]
	for _, it := range w.batch {
		if it.wait != nil && !it.wait.state.CompareAndSwap(waiting, taken) {
			continue
		}
		kept = append(kept, it)
	}
	if dropped := len(w.batch) - len(kept); dropped > 0 {
		clear(w.batch[len(kept):])
		w.in.unhold(dropped)
	}
	w.batch = kept
}
