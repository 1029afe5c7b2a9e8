package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// MarkRead records that user has read chatID up to the message uptoMsgID and
// returns the read position now stored. The position only moves forward:
// marking an older message keeps (and returns) the newer position, so the
// answer is always the stored state, never the mark's own message. A
// non-member gets chatd.ErrForbidden; an unknown chat, or a message not in
// that chat, chatd.ErrNotFound. It is MarkReadBatch with one mark.
func (s *Store) MarkRead(ctx context.Context, user, chatID, uptoMsgID string) (chatd.ReadPosition, error) {
	res, err := s.MarkReadBatch(ctx, []ReadMark{{User: user, Chat: chatID, Upto: uptoMsgID}})
	if err != nil {
		return chatd.ReadPosition{}, err
	}
	return res[0].ReadPosition, res[0].Err
}

// ReadMark is one read receipt to store: User has read Chat up to the
// message Upto.
type ReadMark struct {
	User, Chat, Upto string
}

// ReadResult is the outcome of one ReadMark: the position now stored, or a
// per-mark error as MarkRead describes.
type ReadResult struct {
	chatd.ReadPosition
	Err error
}

// markReadSQL checks membership and moves the read position forward in one
// statement, so a batch is one round trip per mark inside one transaction.
// A mark that does not move the position writes nothing (clients re-send
// the same read often); the position it returns is then the stored one, as
// of the statement's snapshot. markReadRecordedSQL also records a moved
// position as a chat change (Config.RecordReads), in the same statement.
const (
	markReadSQL         = markReadMove + markReadAnswer
	markReadRecordedSQL = markReadMove + `,
	recorded as (
		insert into chat_changes (kind, chat_id, users, seq, upto)
		select 'read', $2, array[$1::text], upto_seq, upto_msg_id from up)` + markReadAnswer
	markReadMove = `
	with mem as (
		select exists (select 1 from chats where id = $2) as chat_exists,
		       exists (select 1 from members where chat_id = $2 and user_id = $1) as is_member),
	m as (select seq, msg_id from history
	      where chat_id = $2 and msg_id = $3 and (select is_member from mem)),
	up as (
		insert into read_state (user_id, chat_id, upto_seq, upto_msg_id)
		select $1, $2, m.seq, m.msg_id from m
		on conflict (user_id, chat_id) do update
			set upto_seq = excluded.upto_seq, upto_msg_id = excluded.upto_msg_id, updated_at = now()
			where read_state.upto_seq < excluded.upto_seq
		returning upto_seq, upto_msg_id)`
	markReadAnswer = `,
	kept as (select upto_seq, upto_msg_id from read_state
	         where user_id = $1 and chat_id = $2 and exists (select 1 from m))
	select (select chat_exists from mem), (select is_member from mem),
		coalesce((select upto_seq from up), (select upto_seq from kept), 0),
		coalesce((select upto_msg_id from up), (select upto_msg_id from kept), '')`
)

// MarkReadBatch stores many read receipts in one transaction (group commit
// of read state: one fsync for the batch) and returns one result per mark,
// in order. An error means the transaction failed and nothing was stored.
func (s *Store) MarkReadBatch(ctx context.Context, marks []ReadMark) ([]ReadResult, error) {
	if len(marks) == 0 {
		return nil, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("mark read: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	// Upserts in (chat, user) order: two batches (on two nodes) that share
	// read_state rows lock them in the same order and cannot deadlock.
	order := make([]int, len(marks))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(marks[a].Chat, marks[b].Chat), strings.Compare(marks[a].User, marks[b].User))
	})
	batch := &pgx.Batch{}
	for _, i := range order {
		mk := marks[i]
		batch.Queue(s.markReadSQL, mk.User, mk.Chat, mk.Upto)
	}
	br := tx.SendBatch(ctx, batch)
	out := make([]ReadResult, len(marks))
	for _, i := range order {
		mk := marks[i]
		var chatExists, member bool
		var pos chatd.ReadPosition
		if err := br.QueryRow().Scan(&chatExists, &member, &pos.Seq, &pos.Upto); err != nil {
			br.Close()
			return nil, fmt.Errorf("mark read: %w", err)
		}
		out[i] = readResult(mk, chatExists, member, pos)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("mark read: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("mark read: commit: %w", err)
	}
	return out, nil
}

func readResult(mk ReadMark, chatExists, member bool, pos chatd.ReadPosition) ReadResult {
	switch {
	case !chatExists:
		return ReadResult{Err: fmt.Errorf("mark read: chat %s: %w", mk.Chat, chatd.ErrNotFound)}
	case !member:
		return ReadResult{Err: fmt.Errorf("mark read: %s is not a member of %s: %w", mk.User, mk.Chat, chatd.ErrForbidden)}
	case pos.Seq == 0: // seqs start at 1: 0 means the message is not in this chat
		return ReadResult{Err: fmt.Errorf("mark read: message %s in %s: %w", mk.Upto, mk.Chat, chatd.ErrNotFound)}
	}
	return ReadResult{ReadPosition: pos}
}

// MembersRead returns, for each of chatIDs, the read position (seq) of
// every current member who has marked anything read; a member who never did
// is absent. Receipts reach only the connections that are live when they
// happen, so a client that starts later learns the others' positions here,
// and can show "read by" for what they read before it connected. A chat
// with no such member is absent from the answer.
func (s *Store) MembersRead(ctx context.Context, chatIDs []string) (map[string]map[string]int64, error) {
	out := make(map[string]map[string]int64)
	if len(chatIDs) == 0 {
		return out, nil
	}
	// The join with members leaves out the positions of former members.
	rows, err := s.pool.Query(ctx, `
		select rs.chat_id, rs.user_id, rs.upto_seq from read_state rs
		join members m on m.chat_id = rs.chat_id and m.user_id = rs.user_id
		where rs.chat_id = any($1::text[])`, chatIDs)
	if err != nil {
		return nil, fmt.Errorf("members read: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var chat, user string
		var seq int64
		if err := rows.Scan(&chat, &user, &seq); err != nil {
			return nil, fmt.Errorf("members read: %w", err)
		}
		if out[chat] == nil {
			out[chat] = make(map[string]int64)
		}
		out[chat][user] = seq
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("members read: %w", err)
	}
	return out, nil
}

// PruneHistory deletes messages older than their chat's retention (the
// chat's override, else defaultRetention, and never less than
// Config.MinChatRetention) as of now, and returns how many it deleted. A
// zero defaultRetention keeps forever the history of every chat that has no
// retention of its own.
// A message that still has an outbox row (accepted, not yet relayed) is
// kept whatever its age: deleting it would lose it for every recipient; it
// goes on a later run, after the relay published it. It deletes in chunks so
// that no single statement holds locks for long.
func (s *Store) PruneHistory(ctx context.Context, defaultRetention time.Duration, now time.Time) (int64, error) {
	const chunk = 5000
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `
			delete from history where id in (
				select h.id from history h join chats c on c.id = h.chat_id
				where h.created_at < $2::timestamptz - greatest(
					coalesce(c.retention, $1::bigint * interval '1 microsecond'),
					$4::bigint * interval '1 microsecond')
				  and (c.retention is not null or $1::bigint > 0)
				  -- unrelayed: the database's check (migration 002) would refuse it anyway
				  and not exists (select 1 from outbox o where o.history_id = h.id)
				limit $3)`,
			defaultRetention.Microseconds(), now, chunk, s.minChatRetention.Microseconds())
		if err != nil {
			return total, fmt.Errorf("prune history: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < chunk {
			return total, nil
		}
	}
}
