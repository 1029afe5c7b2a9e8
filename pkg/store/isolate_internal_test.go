package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Only errors PostgreSQL raises for a row's values split a batch; the
// transaction's, the connection's and the server's fail it whole, as before
// batch isolation (docs/architecture.md, invariant 6).
func TestRowErrorClasses(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"NUL in text", &pgconn.PgError{Code: "22021"}, true},
		{"bad JSON", &pgconn.PgError{Code: "22P02"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, true},
		{"check violation", &pgconn.PgError{Code: "23514"}, true},
		{"index row too large", &pgconn.PgError{Code: "54000"}, true},
		{"raised by a trigger", &pgconn.PgError{Code: "P0001"}, true},
		{"wrapped", fmt.Errorf("insert history and outbox: %w", &pgconn.PgError{Code: "22021"}), true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, false},
		{"disk full", &pgconn.PgError{Code: "53100"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"not from PostgreSQL", errors.New("conn closed"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rowError(tt.err); got != tt.want {
				t.Fatalf("rowError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
