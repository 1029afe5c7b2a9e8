package store

import (
	"context"
	"fmt"
	"time"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// recordMember writes a member change in tx, the change's own transaction,
// while Config.RecordMembers is on; users must be non-empty.
func (s *Store) recordMember(ctx context.Context, tx pgx.Tx, chatID, change, by string, users []string) error {
	if !s.recordMembers {
		return nil
	}
	_, err := tx.Exec(ctx, `insert into chat_changes (kind, chat_id, change, users, by_user)
		values ('member', $1, $2, $3, $4)`, chatID, change, users, by)
	return err
}

// ReadChanges returns the oldest recorded changes, at most limit, in id
// order.
func (s *Store) ReadChanges(ctx context.Context, limit int) ([]chatd.ChatChange, error) {
	rows, err := s.pool.Query(ctx, `select id, kind, chat_id, change, users, by_user, seq, upto, at
		from chat_changes order by id limit $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read chat changes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chatd.ChatChange, error) {
		var c chatd.ChatChange
		var kind string
		err := r.Scan(&c.ID, &kind, &c.Chat, &c.Change, &c.Users, &c.By, &c.Seq, &c.Upto, &c.TS)
		c.Kind, c.TS = chatd.EventKind(kind), c.TS.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read chat changes: %w", err)
	}
	return out, nil
}

// DeleteChanges removes the changes with these ids (they are in the
// changes stream).
func (s *Store) DeleteChanges(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `delete from chat_changes where id = any($1)`, ids); err != nil {
		return fmt.Errorf("delete chat changes: %w", err)
	}
	return nil
}

// PruneChanges deletes the changes recorded before before and returns how
// many: those the publisher never moved (the endpoint that took their kind
// was removed, or NATS was down that long) and that the changes stream
// would no longer keep anyway.
func (s *Store) PruneChanges(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `delete from chat_changes where at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("prune chat changes: %w", err)
	}
	return tag.RowsAffected(), nil
}
