package store

import (
	"context"
	"fmt"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// History page sizes.
const (
	// DefaultHistoryLimit is the page size when HistoryQuery.Limit is <= 0.
	DefaultHistoryLimit = 100
	// MaxHistoryLimit caps HistoryQuery.Limit.
	MaxHistoryLimit = 1000
)

// HistoryQuery selects a page of a chat's history. The page starts strictly
// after the cursor.
type HistoryQuery struct {
	// SinceID is a message id; when set it wins over AfterSeq. An id not in
	// this chat (purged by retention, never seen, another chat's) starts the
	// page at the oldest retained message, as the wire contract asks.
	SinceID string
	// AfterSeq is a seq cursor; 0 means from the oldest retained message.
	// Negative is chatd.ErrInvalid.
	AfterSeq int64
	// Limit is the page size: <= 0 means DefaultHistoryLimit, and values over
	// MaxHistoryLimit are capped.
	Limit int
}

// History returns one page of the chat's messages, oldest first by seq, and
// whether more follow. It walks the unique (chat_id, seq) index. It does not
// check that the chat exists or who asks: call IsMember first.
func (s *Store) History(ctx context.Context, chatID string, q HistoryQuery) ([]chatd.Message, bool, error) {
	if q.AfterSeq < 0 {
		return nil, false, fmt.Errorf("history: after_seq %d: %w", q.AfterSeq, chatd.ErrInvalid)
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultHistoryLimit
	case limit > MaxHistoryLimit:
		limit = MaxHistoryLimit
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
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chatd.Message, error) {
		m := chatd.Message{Chat: chatID}
		err := scanEventState(r, &m)
		return m, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", chatID, err)
	}
	if len(msgs) > limit {
		return msgs[:limit], true, nil
	}
	return msgs, false, nil
}
