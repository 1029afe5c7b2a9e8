package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	// errPublish marks a round that failed on the NATS side (as opposed to
	// PostgreSQL's); only these count toward stepping down.
	errPublish = errors.New("publish")
	// errNotConnected fails a round at once while the link is down.
	errNotConnected = errors.New("not connected to NATS")
	// errEncode is an envelope that cannot be encoded: a property of the row.
	errEncode = errors.New("encode envelope")
)

// round publishes the oldest outbox rows in order, waits until every
// publish has settled, deletes the acknowledged prefix and sets aside the
// rows in it that can never be published. It returns how many rows it read
// and how many of them it is done with (relayed or set aside).
func (r *Relay) round(ctx context.Context) (read, done int, err error) {
	if !r.nc.IsConnected() {
		// Publishing now would only fill the client's reconnect buffer,
		// which sends stale rows whenever the link returns, even after
		// another node has relayed them.
		return 0, 0, fmt.Errorf("%w: %w", errPublish, errNotConnected)
	}
	r.cut = false
	entries, err := r.read(ctx)
	if err != nil || len(entries) == 0 {
		return 0, 0, err
	}
	read = len(entries)
	var fates []fate
	if r.cfg.Settler != nil {
		entries, fates, r.cut = r.settle(entries)
		if len(entries) == 0 {
			return read, 0, nil
		}
	}
	results, err := r.publishAll(ctx, entries, fates)
	if err != nil {
		return 0, 0, err
	}
	done, err = r.finish(ctx, entries, results, fates)
	return read, done, err
}

// read returns the oldest outbox rows, in id order. With nothing held it
// reads them in full, as every relay did before the hand-off (one query).
// Otherwise it reads only their ids, takes the messages it holds, and reads
// the others in full by id: the ids come from the table, so the round
// publishes exactly what a full read would have returned, and an entry held
// but no longer in the outbox is never published.
func (r *Relay) read(ctx context.Context) ([]store.OutboxEntry, error) {
	if r.held.len() == 0 {
		entries, err := r.cfg.Outbox.ReadOutbox(ctx, r.cfg.Batch)
		r.metrics.rowsTable.Add(float64(len(entries)))
		return entries, err
	}
	mark := r.held.beginRound()
	refs, err := r.cfg.Outbox.ReadOutboxIDs(ctx, r.cfg.Batch)
	if err != nil {
		return nil, err
	}
	entries := make([]store.OutboxEntry, len(refs))
	missing := r.held.take(refs, mark, len(refs) < r.cfg.Batch, entries)
	r.metrics.rowsMemory.Add(float64(len(refs) - len(missing)))
	if len(missing) == 0 {
		return entries, nil
	}
	ids := make([]int64, len(missing))
	for k, i := range missing {
		ids[k] = refs[i].ID
	}
	rows, err := r.cfg.Outbox.ReadOutboxByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	r.metrics.rowsTable.Add(float64(len(rows)))
	return merge(entries, missing, rows), nil
}

// merge puts rows (read by id, in id order) into entries at the indexes
// missing (in order). A missing row that rows lacks left the outbox between
// the two reads (another relay's delete, if this one lost its lock) and is
// dropped from the round rather than published from nothing.
func merge(entries []store.OutboxEntry, missing []int, rows []store.OutboxEntry) []store.OutboxEntry {
	out := entries[:0]
	j, k := 0, 0
	for i := range entries {
		if k < len(missing) && missing[k] == i {
			k++
			if j < len(rows) && rows[j].ID == entries[i].ID {
				out = append(out, rows[j])
				j++
			}
			continue
		}
		out = append(out, entries[i])
	}
	return out
}

// publishAll publishes entries in order and returns each one's outcome,
// waiting until every publish is answered or the publish timeout passes: a
// round that failed leaves nothing outstanding behind it. It stops at the
// first transient failure (stalled, link lost): the rest would fail the
// same way, and their outcome stays errPending.
//
// An entry whose fate is skip (settle.go) is not published; its outcome is
// nil, done, as if it had been. Without fates every entry is published.
func (r *Relay) publishAll(ctx context.Context, entries []store.OutboxEntry, fates []fate) ([]error, error) {
	if len(fates) > 0 && !slices.ContainsFunc(fates, func(f fate) bool { return f != skip }) {
		return make([]error, len(entries)), nil // nothing to publish
	}
	rd, err := r.pub.begin(len(entries))
	if err != nil {
		return nil, fmt.Errorf("%w: reply subscription: %w", errPublish, err)
	}
	for i := range entries {
		prefix := r.cfg.SubjectPrefix
		if fates != nil {
			switch fates[i] {
			case skip:
				continue
			case taken:
				prefix = r.cfg.TakenPrefix
			}
			r.sent[entries[i].ID] = fates[i]
		}
		if err := r.publish(rd, i, prefix, &entries[i]); err != nil && !permanent(err) {
			break
		}
	}
	results := r.pub.wait(ctx, rd, r.cfg.PublishTimeout)
	for i, f := range fates {
		if f == skip {
			results[i] = nil
		}
	}
	return results, nil
}

// publish sends one entry as publish i of the round, under prefix+chat. No
// client-side retries: a retry could land after later rows and reorder the
// stream; the round republishes from the first failure.
func (r *Relay) publish(rd *pubRound, i int, prefix string, e *store.OutboxEntry) error {
	data, err := codec.EncodeEnvelope(&chatd.Envelope{OutboxID: e.ID, Message: e.Message, Device: e.Message.Device, Recipients: e.Recipients})
	if err != nil {
		err = fmt.Errorf("%w %d: %w", errEncode, e.ID, err)
		r.pub.fail(rd, i, err)
		return err
	}
	return r.pub.publish(rd, i, prefix+e.Message.Chat, strconv.FormatInt(e.ID, 10), data)
}

// finish walks the settled publishes in order. Acknowledged rows are
// deleted and rows that can never be published are set aside, up to the
// first transient failure: only that prefix is done (it returns its
// length), the rest is retried.
func (r *Relay) finish(ctx context.Context, entries []store.OutboxEntry, results []error, fates []fate) (int, error) {
	ids := make([]int64, 0, len(results))
	now := r.cfg.Now()
	done, skipped, settled := 0, 0, 0
	var failed error
	for i, err := range results {
		e := &entries[i]
		if err == nil {
			ids = append(ids, e.ID)
			f := publish
			if fates != nil {
				f = fates[i]
			}
			if f == skip {
				skipped++
			} else {
				r.metrics.lag.Observe(now.Sub(e.CreatedAt).Seconds())
			}
			if f != publish {
				settled++
			}
			done++
			continue
		}
		if !permanent(err) {
			failed = transient(err)
			break
		}
		if err := r.setAside(ctx, e, err); err != nil {
			failed = err
			break
		}
		done++
	}
	if len(ids) > 0 {
		if _, err := r.cfg.Outbox.DeleteOutbox(ctx, ids); err != nil {
			// Published but not deleted: the next round republishes them and
			// the stream's duplicate window drops the copies.
			return 0, fmt.Errorf("delete relayed rows: %w", err)
		}
		r.held.drop(ids)
		r.metrics.relayed.Add(float64(len(ids) - skipped))
		r.metrics.settled.Add(float64(settled))
	}
	r.forget(entries[:done], fates)
	return done, failed
}

// forget tells the Settler that the relay is done with entries (deleted or
// set aside), and stops tracking them as sent. Those skipped or published
// under TakenPrefix are told as skipped: no stream delivery comes to live
// delivery for them. The others are told as published.
func (r *Relay) forget(entries []store.OutboxEntry, fates []fate) {
	if r.cfg.Settler == nil || len(entries) == 0 {
		return
	}
	var skipped, published []string
	for i := range entries {
		e := &entries[i]
		delete(r.sent, e.ID)
		if fates[i] != publish {
			skipped = append(skipped, e.Message.ID)
			continue
		}
		published = append(published, e.Message.ID)
	}
	r.cfg.Settler.Forget(skipped, published)
}

// transient wraps a publish error that is retried. When the stream itself
// answered with a refusal (full, for one) this node reaches it as well as
// any other would, so that is no reason to step down; anything else (no
// answer, no responders, link lost) is marked errPublish and counts.
func transient(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return fmt.Errorf("stream refused the publish: %w", err)
	}
	return fmt.Errorf("%w: %w", errPublish, err)
}

// setAside moves a row that can never be published out of the outbox, so
// it cannot stop the relay for every chat. The message stays in history.
func (r *Relay) setAside(ctx context.Context, e *store.OutboxEntry, reason error) error {
	if err := r.cfg.Outbox.SetAsideOutbox(ctx, e.ID, reason.Error()); err != nil {
		return err
	}
	r.held.drop([]int64{e.ID})
	r.metrics.setAside.Inc()
	r.log.Error("relay set aside an outbox row it can never publish; its recipients recover it from history; the row is kept in outbox_set_aside",
		"chat", e.Message.Chat, "msg_id", e.Message.ID, "outbox_id", e.ID, "reason", reason)
	return nil
}

// permanent reports whether a publish error belongs to the row (it fails
// the same way every time) rather than to NATS's state right now. Only
// these rows are set aside; anything else (timeout, no responders during an
// election, stream full, link down) is retried, because a wrongly retried
// row costs a round while a wrongly set-aside row costs a live delivery.
func permanent(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) || errors.Is(err, errEncode) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
}
