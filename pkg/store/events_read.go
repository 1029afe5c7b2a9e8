package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// eventStateColumns are the history columns a read returns for one event
// with, on a message, its current state; scanEventState reads them.
const eventStateColumns = `msg_id, cid, sender, device, body, seq, created_at,
	kind, target, meta, emoji, react_on, edited_at, deleted, reactions`

func scanEventState(r pgx.Row, m *chatd.Message) error {
	err := r.Scan(&m.ID, &m.CID, &m.From, &m.Device, &m.Body, &m.Seq, &m.TS,
		&m.Kind, (*nullString)(&m.Target), (*[]byte)(&m.Meta), (*nullString)(&m.Emoji), &m.On,
		&m.EditedAt, &m.Deleted, &m.Reactions)
	m.TS, m.Kind = m.TS.UTC(), storedKind(m.Kind)
	if m.EditedAt != nil {
		at := m.EditedAt.UTC()
		m.EditedAt = &at
	}
	return err
}

// nullString scans a nullable text column into a string, NULL as "".
type nullString string

// ScanText implements pgtype.TextScanner.
func (s *nullString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*s = ""
	case string:
		*s = nullString(v)
	default:
		return fmt.Errorf("scan %T into text", src)
	}
	return nil
}

// Message returns one event of the chat by id, a message with its current
// state. It does not check who asks: call IsMember first. An id that is not
// in this chat is chatd.ErrNotFound.
func (s *Store) Message(ctx context.Context, chatID, msgID string) (chatd.Message, error) {
	m := chatd.Message{Chat: chatID}
	row := s.pool.QueryRow(ctx, `select `+eventStateColumns+` from history where msg_id = $1 and chat_id = $2`, msgID, chatID)
	err := scanEventState(row, &m)
	if errors.Is(err, pgx.ErrNoRows) {
		return chatd.Message{}, fmt.Errorf("message %s in chat %s: %w", msgID, chatID, chatd.ErrNotFound)
	}
	if err != nil {
		return chatd.Message{}, fmt.Errorf("message %s: %w", msgID, err)
	}
	return m, nil
}
