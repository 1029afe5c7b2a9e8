package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// History returns one page of the chat's messages, oldest first by seq, and
// whether more follow (with BeforeSeq: whether older ones remain). It walks
// the unique (chat_id, seq) index. It does not check that the chat exists
// or who asks: call IsMember first.
func (s *Store) History(ctx context.Context, chatID string, q chatd.HistoryQuery) ([]chatd.Message, bool, error) {
	switch {
	case q.AfterSeq < 0:
		return nil, false, fmt.Errorf("history: after_seq %d: %w", q.AfterSeq, chatd.ErrInvalid)
	case q.BeforeSeq < 0:
		return nil, false, fmt.Errorf("history: before %d: %w", q.BeforeSeq, chatd.ErrInvalid)
	case q.BeforeSeq > 0 && (q.AfterSeq > 0 || q.SinceID != ""):
		return nil, false, fmt.Errorf("history: before excludes since and after_seq: %w", chatd.ErrInvalid)
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = chatd.DefaultHistoryLimit
	case limit > chatd.MaxHistoryLimit:
		limit = chatd.MaxHistoryLimit
	}
	if q.BeforeSeq > 0 {
		return s.historyBefore(ctx, chatID, q.BeforeSeq, limit)
	}
	after := q.AfterSeq
	if q.SinceID != "" {
		after = 0 // an unresolvable SinceID means "from the oldest", not AfterSeq
	}
	// One more row than asked tells whether another page follows.
	rows, err := s.pool.Query(ctx, `
		select `+eventStateColumns+`
		from history
		where chat_id = $1
		  and seq > coalesce((select seq from history where msg_id = $2 and chat_id = $1), $3)
		order by seq
		limit $4`, chatID, q.SinceID, after, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", chatID, err)
	}
	msgs, err := collectHistory(rows, chatID)
	if err != nil {
		return nil, false, err
	}
	if len(msgs) > limit {
		return msgs[:limit], true, nil
	}
	return msgs, false, nil
}

// historyBefore is History's page of the limit messages just below seq
// before: read newest first down the index, then turned oldest first like
// every page.
func (s *Store) historyBefore(ctx context.Context, chatID string, before int64, limit int) ([]chatd.Message, bool, error) {
	// One more row than asked tells whether older messages remain.
	rows, err := s.pool.Query(ctx, `
		select `+eventStateColumns+`
		from history
		where chat_id = $1 and seq < $2
		order by seq desc
		limit $3`, chatID, before, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", chatID, err)
	}
	msgs, err := collectHistory(rows, chatID)
	if err != nil {
		return nil, false, err
	}
	more := len(msgs) > limit
	msgs = msgs[:min(len(msgs), limit)]
	slices.Reverse(msgs)
	return msgs, more, nil
}

func collectHistory(rows pgx.Rows, chatID string) ([]chatd.Message, error) {
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chatd.Message, error) {
		m := chatd.Message{Chat: chatID}
		err := scanEventState(r, &m)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", chatID, err)
	}
	return msgs, nil
}
