package store

import (
	"context"

	"github.com/jackc/tern/v2/migrate"
)

// ListChatsSQL lets the plan test EXPLAIN the statement ListChats runs,
// not a copy that could drift from it.
const ListChatsSQL = listChatsSQL

// MigrateTo moves the schema to version v, up or down, so tests can run a
// migration's down step.
func (s *Store) MigrateTo(ctx context.Context, v int32) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(migrations()); err != nil {
		return err
	}
	return m.MigrateTo(ctx, v)
}
