package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HighWater is the highest of what the database handed out that someone
// outside it has seen: a chat's seq held by a client or the stream, an
// outbox id used as a stream message's Nats-Msg-Id. After a failover to a
// standby that missed the last commits, the new primary would hand those
// out again; raising its counters past the high water makes the loss a gap
// (docs/protocol.md, "PostgreSQL failover") instead of a second message
// under the same seq, or a new message the stream drops as a duplicate.
type HighWater struct {
	Seqs     map[string]int64 // chat id → highest seq seen
	OutboxID int64            // highest outbox id seen
}

// timeline is the WAL timeline the server writes on, 0 on a standby.
// Every promotion (and every point-in-time restore) starts a new one, so a
// new timeline under the same database means commits may have been lost.
func timeline(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var tl int64
	err := conn.QueryRow(ctx, `SELECT CASE WHEN pg_is_in_recovery() THEN 0
		ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END`).Scan(&tl)
	if err != nil {
		return 0, fmt.Errorf("read timeline: %w", err)
	}
	return tl, nil
}

// Timeline is the WAL timeline of the primary the pool last connected to
// (0 before the first connection): it rises by one with each failover, so
// a graph of it shows when the database failed over.
func (s *Store) Timeline() int64 { return s.tl.Load() }

// Failover is a change of timeline the store followed: the primary it
// wrote to was replaced by a promoted standby (or the database restored).
type Failover struct {
	From, To int64
	At       time.Time // when the pool first connected on timeline To
}

// LastFailover is the last failover the store followed since Open; ok is
// false when there was none. Safe for concurrent use.
func (s *Store) LastFailover() (f Failover, ok bool) {
	if p := s.failover.Load(); p != nil {
		return *p, true
	}
	return Failover{}, false
}

// checkTimeline runs on every new pool connection, before the pool hands
// it out: if the server is on another timeline than the last connection
// saw, it raises the counters past the high water first, so no send is
// accepted on the new primary before that. It fails the connection (and
// so the sends waiting for it: unavailable, resend) while the high water
// cannot be read.
func (s *Store) checkTimeline(ctx context.Context, conn *pgx.Conn) error {
	tl, err := timeline(ctx, conn)
	if err != nil || tl == 0 || tl == s.tl.Load() {
		return err
	}
	s.tlMu.Lock()
	defer s.tlMu.Unlock()
	prev := s.tl.Load()
	if tl == prev {
		return nil
	}
	if prev != 0 {
		if err := s.raiseAfterFailover(ctx, conn, prev, tl); err != nil {
			return err
		}
		s.failover.Store(&Failover{From: prev, To: tl, At: time.Now()})
	}
	s.tl.Store(tl)
	return nil
}

// raiseAfterFailover raises the counters past the high water (when the
// store has one) and logs the failover: one line per store, whatever the
// number of connections that follow it, since tlMu lets one of them do it.
func (s *Store) raiseAfterFailover(ctx context.Context, conn *pgx.Conn, prev, tl int64) error {
	// The timelines are in the message, not only in attributes, so a
	// search for "postgres failover" shows which failover at a glance.
	msg := fmt.Sprintf("postgres failover: timeline %d→%d", prev, tl)
	if s.highWater == nil {
		s.log.Warn(msg, "timeline_from", prev, "timeline", tl)
		return nil
	}
	hw, err := s.highWater(ctx)
	if err != nil {
		return fmt.Errorf("timeline %d → %d: read the seq high water: %w", prev, tl, err)
	}
	chats, err := raise(ctx, conn, hw)
	if err != nil {
		return fmt.Errorf("timeline %d → %d: %w", prev, tl, err)
	}
	s.log.Warn(msg+"; counters raised past what was handed out before, so any lost commit shows as a gap in its chat",
		"timeline_from", prev, "timeline", tl, "chats_raised", chats, "outbox_id_floor", hw.OutboxID)
	return nil
}

// raise moves each chat's last_seq and the outbox id sequence up to hw
// (never down), and returns how many chats moved.
func raise(ctx context.Context, conn *pgx.Conn, hw HighWater) (int64, error) {
	ids := make([]string, 0, len(hw.Seqs))
	seqs := make([]int64, 0, len(hw.Seqs))
	for id, seq := range hw.Seqs {
		ids, seqs = append(ids, id), append(seqs, seq)
	}
	tag, err := conn.Exec(ctx, `UPDATE chats SET last_seq = m.seq
		FROM unnest($1::text[], $2::bigint[]) AS m(id, seq)
		WHERE chats.id = m.id AND chats.last_seq < m.seq`, ids, seqs)
	if err != nil {
		return 0, fmt.Errorf("raise chats' last_seq: %w", err)
	}
	if hw.OutboxID > 0 {
		_, err = conn.Exec(ctx, `SELECT setval(q.s, $1)
			FROM (SELECT pg_get_serial_sequence('outbox', 'id')::regclass AS s) q
			WHERE coalesce(pg_sequence_last_value(q.s), 0) < $1`, hw.OutboxID)
		if err != nil {
			return 0, fmt.Errorf("raise the outbox id: %w", err)
		}
	}
	return tag.RowsAffected(), nil
}

// Raise moves each chat's last_seq and the outbox id sequence up to hw,
// never down, and returns how many chats moved. The node calls it at start
// with what the delivery stream holds (see HighWater).
func (s *Store) Raise(ctx context.Context, hw HighWater) (int64, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("raise: %w", err)
	}
	defer conn.Release()
	return raise(ctx, conn.Conn(), hw)
}
