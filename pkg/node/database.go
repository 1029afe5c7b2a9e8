package node

import (
	"context"
	"fmt"

	"github.com/chatd/chatd/embedded"
	"github.com/jackc/pgx/v5"
)

// createDatabase creates dbname on the managed server unless it exists.
func createDatabase(ctx context.Context, pg *embedded.Postgres, dbname string) error {
	conn, err := pgx.Connect(ctx, pg.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to managed postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbname).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", dbname, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbname}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", dbname, err)
	}
	return nil
}
