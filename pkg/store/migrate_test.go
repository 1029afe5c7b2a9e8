package store_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/store"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestOpenMigratesFromEmpty(t *testing.T) {
	s, dsn := mustOpen(t)
	ctx := context.Background()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
	for _, table := range []string{"chats", "members", "history", "outbox", "read_state"} {
		if n := count(t, s, `select count(*) from pg_tables where schemaname = 'public' and tablename = $1`, table); n != 1 {
			t.Errorf("table %s: got %d, want 1", table, n)
		}
	}
	// A second Open on a migrated database applies nothing and keeps the data.
	mustGroup(t, s, "alice")
	s2 := mustOpenDSN(t, dsn)
	if err := s2.Ready(ctx); err != nil {
		t.Fatalf("ready after second open: %v", err)
	}
	if chats, err := s2.ListChats(ctx, "alice"); err != nil || len(chats) != 1 {
		t.Fatalf("chats after second open: got %d (%v), want 1", len(chats), err)
	}
	if n := count(t, s, `select count(*) from chatd_schema_version`); n != 1 {
		t.Fatalf("schema version rows: got %d, want 1", n)
	}
}

func TestOpenConcurrentlyOnEmptyDatabase(t *testing.T) {
	_, dsn := mustOpen(t)
	// Drop the schema so that several Opens race to create it.
	s := mustOpenDSN(t, dsn)
	if _, err := s.Pool().Exec(context.Background(), `drop table chat_changes, delivery_state, webhook_failures, last_seen, outbox_set_aside, read_state, outbox, history, members, chats, chatd_schema_version`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
			if err == nil {
				err = s.Ready(context.Background())
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestReadyFailsWhenSchemaIsBehind(t *testing.T) {
	s, _ := mustOpen(t)
	if _, err := s.Pool().Exec(context.Background(), `update chatd_schema_version set version = 0`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err == nil {
		t.Fatal("ready with schema version 0: got nil, want an error")
	}
}

func TestUniqueConstraints(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	insert := `insert into history (msg_id, chat_id, seq, sender, device, cid, body, created_at)
		values ($1, $2, $3, $4, 'd', $5, 'b', $6)`
	if _, err := s.Pool().Exec(ctx, insert, "M1", c.ID, 1, "alice", "k1", time.Now()); err != nil {
		t.Fatalf("first insert: %v", err)
	}
	tests := []struct {
		name           string
		msgID          string
		seq            int64
		sender, cid    string
		wantConstraint string
	}{
		{"same msg id", "M1", 2, "bob", "k2", "history_msg_id_key"},
		{"same chat and seq", "M2", 1, "bob", "k2", "history_chat_seq_key"},
		{"same sender and cid", "M3", 3, "alice", "k1", "history_sender_cid_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Pool().Exec(ctx, insert, tt.msgID, c.ID, tt.seq, tt.sender, tt.cid, time.Now())
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
				t.Fatalf("got %v, want a unique violation", err)
			}
			if pgErr.ConstraintName != tt.wantConstraint {
				t.Fatalf("got constraint %s, want %s", pgErr.ConstraintName, tt.wantConstraint)
			}
		})
	}
	// The same cid from another sender is fine.
	if _, err := s.Pool().Exec(ctx, insert, "M4", c.ID, 2, "bob", "k1", time.Now()); err != nil {
		t.Fatalf("same cid, other sender: %v", err)
	}
}

// Migration 004 widens the (chat_id, seq) key with sender for the unread
// count, and its down step narrows it back. The constraint keeps its name
// both ways, and the data stays.
func TestMigrationUnreadIndexDownAndUp(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice")
	mustFill(t, s, c.ID, "alice", 10)
	check := func(step string, wantInclude bool) {
		t.Helper()
		var def string
		if err := s.Pool().QueryRow(ctx, `select pg_get_indexdef(conindid) from pg_constraint
			where conname = 'history_chat_seq_key' and contype = 'u'`).Scan(&def); err != nil {
			t.Fatalf("%s: unique constraint history_chat_seq_key: %v", step, err)
		}
		if got := strings.Contains(def, "INCLUDE (sender)"); got != wantInclude {
			t.Errorf("%s: index %s; want INCLUDE (sender): %v", step, def, wantInclude)
		}
		if n := count(t, s, `select count(*) from history where chat_id = $1`, c.ID); n != 10 {
			t.Errorf("%s: got %d messages, want 10", step, n)
		}
	}
	if err := s.MigrateTo(ctx, 4); err != nil { // 005 widens the key further
		t.Fatalf("down to 4: %v", err)
	}
	check("up", true)
	if err := s.MigrateTo(ctx, 3); err != nil {
		t.Fatalf("down to 3: %v", err)
	}
	check("down", false)
	if err := s.MigrateTo(ctx, 4); err != nil {
		t.Fatalf("up to 4: %v", err)
	}
	check("up again", true)
	if err := s.MigrateTo(ctx, 5); err != nil {
		t.Fatalf("up to 5: %v", err)
	}
	var def string
	if err := s.Pool().QueryRow(ctx, `select pg_get_indexdef(conindid) from pg_constraint
		where conname = 'history_chat_seq_key' and contype = 'u'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "INCLUDE (sender, kind, deleted)") {
		t.Errorf("at 5: index %s; want INCLUDE (sender, kind, deleted)", def)
	}
}

// During a rolling upgrade the first new node migrates the schema while the
// old nodes still serve: they stay ready on the newer schema (a release's
// migrations only add, docs/operations.md "Rolling upgrades"), instead of
// every old node failing /readyz at once.
func TestReadyWhenSchemaIsAhead(t *testing.T) {
	s, _ := mustOpen(t)
	if _, err := s.Pool().Exec(context.Background(), `update chatd_schema_version set version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err != nil {
		t.Fatalf("ready on a schema one migration ahead: %v, want ready", err)
	}
}

// An old node that starts (or restarts) on a schema a newer release
// migrated runs on it, as it would have had it been running already.
func TestOpenOnASchemaAhead(t *testing.T) {
	s, dsn := mustOpen(t)
	if _, err := s.Pool().Exec(context.Background(), `update chatd_schema_version set version = version + 1`); err != nil {
		t.Fatal(err)
	}
	s2, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
	if err != nil {
		t.Fatalf("open on a schema one migration ahead: %v", err)
	}
	defer s2.Close()
	mustGroup(t, s2, "alice", "bob")
}

// contracting matches the statements that would break the release before
// on a migrated schema: dropping, renaming or retyping what it reads.
var contracting = regexp.MustCompile(`(?i)\b(drop\s+(table|column|view|function|trigger)|rename\b|alter\s+column\s+\S+\s+(type|set\s+not\s+null))`)

// A release's migrations only add, so nodes of the release before keep
// working on the migrated schema during a rolling upgrade
// (docs/operations.md, "Rolling upgrades"). A migration's down part (below
// the tern separator) may drop what its up part adds.
func TestMigrationsOnlyAdd(t *testing.T) {
	dir := os.DirFS("migrations")
	files, err := fs.Glob(dir, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := fs.ReadFile(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(b), "---- create above / drop below ----")
		for _, line := range strings.Split(up, "\n") {
			code, _, _ := strings.Cut(line, "--")
			if m := contracting.FindString(code); m != "" {
				t.Errorf("%s: %q: %s breaks the release before during a rolling upgrade; add the new shape now and remove the old one a release later", f, strings.TrimSpace(line), strings.ToUpper(m))
			}
		}
	}
}
