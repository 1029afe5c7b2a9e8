package store

import (
	"context"
	"fmt"
	"time"

	"github.com/chatd/chatd"
)

// MarkRead records that user has read chatID up to the message uptoMsgID and
// returns the read position now stored, as a seq. The position only moves
// forward: marking an older message keeps (and returns) the newer position.
// A non-member gets chatd.ErrForbidden; an unknown chat, or a message not in
// that chat, chatd.ErrNotFound.
func (s *Store) MarkRead(ctx context.Context, user, chatID, uptoMsgID string) (int64, error) {
	if err := s.IsMember(ctx, chatID, user); err != nil {
		return 0, fmt.Errorf("mark read: %w", err)
	}
	var seq int64
	err := s.pool.QueryRow(ctx, `
		with m as (select seq, msg_id from history where chat_id = $2 and msg_id = $3),
		up as (
			insert into read_state (user_id, chat_id, upto_seq, upto_msg_id)
			select $1, $2, m.seq, m.msg_id from m
			on conflict (user_id, chat_id) do update
				set upto_seq = excluded.upto_seq, upto_msg_id = excluded.upto_msg_id, updated_at = now()
				where read_state.upto_seq < excluded.upto_seq
			returning upto_seq)
		select coalesce(
			(select upto_seq from up),
			(select upto_seq from read_state where user_id = $1 and chat_id = $2 and exists (select 1 from m)),
			0)`,
		user, chatID, uptoMsgID).Scan(&seq)
	if err == nil && seq == 0 { // seqs start at 1: 0 means the message is not in this chat
		return 0, fmt.Errorf("mark read: message %s in %s: %w", uptoMsgID, chatID, chatd.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("mark read: %w", err)
	}
	return seq, nil
}

// PruneHistory deletes messages older than their chat's retention (the
// chat's override, else defaultRetention) as of now, and returns how many it
// deleted. Their outbox rows, if any are left, go with them (the cascade:
// retention is never blocked by the outbox). It deletes in chunks so that no
// single statement holds locks for long.
func (s *Store) PruneHistory(ctx context.Context, defaultRetention time.Duration, now time.Time) (int64, error) {
	const chunk = 5000
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `
			delete from history where id in (
				select h.id from history h join chats c on c.id = h.chat_id
				where h.created_at < $2::timestamptz - coalesce(c.retention, $1::bigint * interval '1 microsecond')
				limit $3)`,
			defaultRetention.Microseconds(), now, chunk)
		if err != nil {
			return total, fmt.Errorf("prune history: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < chunk {
			return total, nil
		}
	}
}
