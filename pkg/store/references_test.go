package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chatd/chatd/pkg/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// wantForeignKeyViolation fails t unless err is PostgreSQL's
// foreign_key_violation (23503), the error the replaced foreign keys gave.
func wantForeignKeyViolation(t *testing.T, what string, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("%s: got %v, want a foreign key violation (23503)", what, err)
	}
}

// The rules of the foreign keys migration 008 replaced still hold for
// whoever writes (each statement below is one a foreign key refused):
// invariant 1 (no outbox row without its history row), a history row
// belongs to a chat, and key columns cannot be moved off their rows.
func TestReferencesAreCheckedWithoutForeignKeys(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	msgs := mustFill(t, s, c.ID, "alice", 3)
	tests := []struct {
		name string
		sql  string
	}{
		{"outbox row without history", `insert into outbox (history_id, recipients) values (1 << 40, '{bob}')`},
		{"outbox rows, one without history", `insert into outbox (history_id, recipients)
			select id, '{bob}'::text[] from history union all select 1 << 40, '{bob}'`},
		{"outbox row moved off its history", `update outbox set history_id = 1 << 40`},
		{"history row of no chat", `insert into history (msg_id, chat_id, seq, sender, device, cid, body, created_at)
			values ('01KBNOCHAT000000000000000X', 'no-such-chat', 1, 'alice', 'd', 'nochat', 'b', now())`},
		{"history row moved to no chat", `update history set chat_id = 'no-such-chat'`},
		{"unrelayed history row's id changed", `update history set id = id + (1 << 40)`},
		{"chat with history renamed", `update chats set id = 'renamed'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Pool().Exec(ctx, tt.sql)
			wantForeignKeyViolation(t, tt.name, err)
		})
	}
	if n := count(t, s, `select count(*) from history where chat_id = $1`, c.ID); n != int64(len(msgs)) {
		t.Fatalf("history rows after the refused statements: got %d, want %d", n, len(msgs))
	}
	if n := count(t, s, `select count(*) from outbox`); n != int64(len(msgs)) {
		t.Fatalf("outbox rows after the refused statements: got %d, want %d", n, len(msgs))
	}
	// What the rules allow goes through: rewriting a row's other columns.
	if _, err := s.Pool().Exec(ctx, `update history set body = body || '!' where chat_id = $1`, c.ID); err != nil {
		t.Fatalf("update of a history row's body: %v", err)
	}
}

// Deleting a chat deletes its history, as the foreign key's ON DELETE
// CASCADE did, and is refused while one of its messages is unrelayed.
func TestDeletingAChatDeletesItsRelayedHistory(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	other := mustGroup(t, s, "alice", "carol")
	mustFill(t, s, c.ID, "alice", 3)
	mustFill(t, s, other.ID, "alice", 2)
	_, err := s.Pool().Exec(ctx, `delete from chats where id = $1`, c.ID)
	wantForeignKeyViolation(t, "delete a chat with unrelayed messages", err)
	if n := count(t, s, `select count(*) from history where chat_id = $1`, c.ID); n != 3 {
		t.Fatalf("history of the chat after the refused delete: got %d rows, want 3", n)
	}
	relayAll(t, s)
	if _, err := s.Pool().Exec(ctx, `delete from chats where id = $1`, c.ID); err != nil {
		t.Fatalf("delete a relayed chat: %v", err)
	}
	if n := count(t, s, `select count(*) from history where chat_id = $1`, c.ID); n != 0 {
		t.Fatalf("history of the deleted chat: got %d rows, want 0", n)
	}
	if n := count(t, s, `select count(*) from history where chat_id = $1`, other.ID); n != 2 {
		t.Fatalf("history of another chat: got %d rows, want 2", n)
	}
}

// Migrations 008 and 009 go down to the foreign keys and up again, and the
// rules hold at every step: 009 dropped the outbox's history_id index that
// the unrelayed-history check probed, and checks by a join instead.
func TestMigrationReferencesDownAndUp(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	mustFill(t, s, c.ID, "alice", 2)
	foreignKeys := func() int64 {
		return count(t, s, `select count(*) from pg_constraint
			where conname in ('outbox_history_id_fkey', 'history_chat_id_fkey') and contype = 'f'`)
	}
	historyIndexes := func() int64 {
		return count(t, s, `select count(*) from pg_indexes where indexname = 'outbox_history_id_idx'`)
	}
	for _, step := range []struct {
		version int32
		fks     int64
		index   int64
	}{{7, 2, 1}, {8, 0, 1}, {9, 0, 0}} {
		if err := s.MigrateTo(ctx, step.version); err != nil {
			t.Fatalf("migrate to %d: %v", step.version, err)
		}
		if got := foreignKeys(); got != step.fks {
			t.Fatalf("at %d: %d of the two foreign keys, want %d", step.version, got, step.fks)
		}
		if got := historyIndexes(); got != step.index {
			t.Fatalf("at %d: %d outbox history_id indexes, want %d", step.version, got, step.index)
		}
		_, err := s.Pool().Exec(ctx, `delete from history`)
		wantForeignKeyViolation(t, "delete unrelayed history", err)
		_, err = s.Pool().Exec(ctx, `insert into outbox (history_id, recipients) values (1 << 40, '{bob}')`)
		wantForeignKeyViolation(t, "outbox row without history", err)
	}
}

// relayAll deletes every outbox row, as the relay does once it published them.
func relayAll(t *testing.T, s *store.Store) {
	t.Helper()
	refs, err := s.ReadOutboxIDs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	if _, err := s.DeleteOutbox(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
}
