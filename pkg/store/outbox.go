package store

import (
	"context"
	"fmt"
	"time"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// Outbox read sizes.
const (
	// DefaultOutboxLimit is ReadOutbox's batch when limit <= 0.
	DefaultOutboxLimit = 256
	// MaxOutboxLimit caps ReadOutbox's limit.
	MaxOutboxLimit = 10000
)

// OutboxEntry is one accepted message waiting to be relayed, with its
// recipients as frozen at acceptance.
type OutboxEntry struct {
	ID         int64
	Message    chatd.Message // joined from history, including Device
	Recipients []string
	CreatedAt  time.Time
}

// ReadOutbox returns up to limit of the oldest outbox rows, in id order, from
// the start of the table: the relay deletes what it relayed, so a row that
// committed late with a lower id is still found on the next read.
// limit <= 0 means DefaultOutboxLimit; it is capped at MaxOutboxLimit.
func (s *Store) ReadOutbox(ctx context.Context, limit int) ([]OutboxEntry, error) {
	rows, err := s.pool.Query(ctx, `
		select o.id, o.recipients, o.created_at,
		       h.msg_id, h.cid, h.chat_id, h.sender, h.device, h.body, h.seq, h.created_at,
		       h.kind, h.target, h.meta, h.emoji, h.react_on
		from outbox o
		-- one primary-key probe per outbox row, never a scan of history
		-- (invariant 1, checked by the database, guarantees the row exists).
		cross join lateral (select * from history h where h.id = o.history_id limit 1) h
		order by o.id
		limit $1`, outboxLimit(limit))
	return collectOutbox(rows, err)
}

// OutboxRef is an outbox row without its message: what the relay reads when
// it holds the message itself (see ReadOutboxIDs).
type OutboxRef struct {
	ID        int64
	CreatedAt time.Time
}

// ReadOutboxIDs returns the ids (and commit times) of up to limit of the
// oldest outbox rows, in id order, as ReadOutbox would return them, without
// their messages: a walk of the primary key and no join with history. The
// relay reads this when it holds most of the messages in memory (handed
// over by this node's commits), and ReadOutboxByID for the rest. limit is
// as for ReadOutbox.
//
// Measured (EXPLAIN ANALYZE, BenchmarkReadOutbox, 256 rows): `select id`
// alone plans an index-only scan, but the outbox churns too fast for its
// pages to be all-visible, so it fetches every heap tuple anyway (as many
// buffers as the plain index scan); created_at, which keeps the relay's lag
// metric measuring from commit, costs nothing more. Against the full read it
// takes a fraction of the time and of the allocations per row.
func (s *Store) ReadOutboxIDs(ctx context.Context, limit int) ([]OutboxRef, error) {
	rows, err := s.pool.Query(ctx, `select id, created_at from outbox order by id limit $1`, outboxLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read outbox ids: %w", err)
	}
	refs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxRef, error) {
		var ref OutboxRef
		err := r.Scan(&ref.ID, &ref.CreatedAt)
		ref.CreatedAt = ref.CreatedAt.UTC()
		return ref, err
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox ids: %w", err)
	}
	return refs, nil
}

// ReadOutboxByID returns the outbox rows with the given ids, as ReadOutbox
// returns them, in id order. An id no longer in the outbox is left out.
func (s *Store) ReadOutboxByID(ctx context.Context, ids []int64) ([]OutboxEntry, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		select o.id, o.recipients, o.created_at,
		       h.msg_id, h.cid, h.chat_id, h.sender, h.device, h.body, h.seq, h.created_at,
		       h.kind, h.target, h.meta, h.emoji, h.react_on
		from outbox o
		cross join lateral (select * from history h where h.id = o.history_id limit 1) h
		where o.id = any($1)
		order by o.id`, int8Array(ids))
	return collectOutbox(rows, err)
}

func outboxLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultOutboxLimit
	case limit > MaxOutboxLimit:
		return MaxOutboxLimit
	}
	return limit
}

// collectOutbox scans the rows of ReadOutbox's select.
func collectOutbox(rows pgx.Rows, err error) ([]OutboxEntry, error) {
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxEntry, error) {
		var e OutboxEntry
		m := &e.Message
		err := r.Scan(&e.ID, &e.Recipients, &e.CreatedAt,
			&m.ID, &m.CID, &m.Chat, &m.From, &m.Device, &m.Body, &m.Seq, &m.TS,
			&m.Kind, (*nullString)(&m.Target), (*[]byte)(&m.Meta), (*nullString)(&m.Emoji), &m.On)
		e.CreatedAt, m.TS, m.Kind = e.CreatedAt.UTC(), m.TS.UTC(), storedKind(m.Kind)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return entries, nil
}

// DeleteOutbox deletes exactly the rows with the given ids (the relayed ones)
// and returns how many it deleted. It never deletes "up to" an id: a
// concurrent batch can commit a lower id after a higher one was read.
func (s *Store) DeleteOutbox(ctx context.Context, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `delete from outbox where id = any($1)`, int8Array(ids))
	if err != nil {
		return 0, fmt.Errorf("delete outbox: %w", err)
	}
	return tag.RowsAffected(), nil
}

// SetAsideOutbox moves the outbox row id into outbox_set_aside with reason,
// in one statement: the relay calls it for a row it can never publish, so
// the rows after it can be relayed. The message stays in history, where its
// recipients recover it. Setting aside a row that is no longer in the
// outbox (already set aside, or deleted) does nothing and is no error.
func (s *Store) SetAsideOutbox(ctx context.Context, id int64, reason string) error {
	_, err := s.pool.Exec(ctx, `
		with moved as (delete from outbox where id = $1 returning id, history_id, recipients, created_at)
		insert into outbox_set_aside (id, history_id, recipients, created_at, reason)
		select id, history_id, recipients, created_at, $2 from moved
		on conflict (id) do nothing`, id, reason)
	if err != nil {
		return fmt.Errorf("set aside outbox row %d: %w", id, err)
	}
	return nil
}

// OutboxStats describes the outbox backlog. The oldest age is chatd's alarm.
type OutboxStats struct {
	Depth  int64
	Oldest time.Time // created_at of the oldest row; zero when empty
}

// OutboxStats counts the outbox. The count is exact, which is cheap because
// the relay keeps the table near empty.
func (s *Store) OutboxStats(ctx context.Context) (OutboxStats, error) {
	var st OutboxStats
	var oldest *time.Time
	if err := s.pool.QueryRow(ctx, `select count(*), min(created_at) from outbox`).Scan(&st.Depth, &oldest); err != nil {
		return OutboxStats{}, fmt.Errorf("outbox stats: %w", err)
	}
	if oldest != nil {
		st.Oldest = oldest.UTC()
	}
	return st, nil
}
