package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/tern/v2/migrate"
)

// versionTable is where tern records the applied schema version.
const versionTable = "public.chatd_schema_version"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migration directory as tern expects it.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		// The path is a compile-time constant checked by go:embed.
		panic(fmt.Sprintf("store: embedded migrations: %v", err))
	}
	return sub
}

// latestVersion is the schema version this binary migrates to: the number of
// embedded migrations (tern numbers them 1..n without gaps).
func latestVersion() int32 {
	paths, err := migrate.FindMigrations(migrations())
	if err != nil {
		panic(fmt.Sprintf("store: embedded migrations: %v", err))
	}
	return int32(len(paths))
}

// migrate applies every pending migration on one pooled connection. tern takes
// an advisory lock around it, so concurrent Opens do not race.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: acquire: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := m.LoadMigrations(migrations()); err != nil {
		return fmt.Errorf("migrate: load: %w", err)
	}
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if latest := latestVersion(); current > latest {
		// A newer release migrated it (a rolling upgrade, or a rollback of
		// this node). Its migrations only add, so this release's queries
		// still hold: run on it rather than refuse to start.
		s.log.Warn("the database schema is newer than this chatd: a newer chatd migrated it; running on it, but upgrade this node",
			"schema_version", current, "this_chatd_migrates_to", latest)
		return nil
	}
	m.OnStart = func(seq int32, name, direction, _ string) {
		s.log.Info("applying migration", "version", seq, "name", name, "direction", direction)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// schemaVersion reads the applied schema version.
func (s *Store) schemaVersion(ctx context.Context) (int32, error) {
	var v int32
	if err := s.pool.QueryRow(ctx, "select version from "+versionTable).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
