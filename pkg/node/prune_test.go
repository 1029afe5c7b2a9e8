package node

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"
)

// pruneRig is a store holding one chat whose only message is relayed and
// thirty days old, and a connection to its database for what the store
// does not do.
type pruneRig struct {
	st *store.Store
	db *pgx.Conn
}

func newPruneRig(t *testing.T) *pruneRig {
	t.Helper()
	ctx := context.Background()
	dsn := testpg.NewDatabase(t)
	st, err := store.Open(ctx, dsn, store.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	c, err := st.CreateGroupChat(ctx, "alice", "old", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := st.CommitBatch(ctx, []store.Send{{SendRequest: chatd.SendRequest{Chat: c.ID, From: "alice", Device: "d1", CID: "c1", Body: "long ago"},
		ID: ulid.Make().String(), TS: time.Now()}})
	if err != nil || out[0].Err != nil {
		t.Fatalf("commit: %v %v", err, out)
	}
	// Relayed (the outbox keeps only what is still to publish) and old.
	for _, q := range []string{`delete from outbox`, `update history set created_at = now() - interval '30 days'`} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return &pruneRig{st: st, db: db}
}

func (r *pruneRig) messages(t *testing.T) int {
	t.Helper()
	var n int
	if err := r.db.QueryRow(context.Background(), `select count(*) from history`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// run runs pruneHistory, with a retention of two days, until the test ends.
func (r *pruneRig) run(t *testing.T, log *slog.Logger) {
	t.Helper()
	n := &Node{Store: r.st, log: log}
	n.cfg.HistoryRetention = 48 * time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.pruneHistory(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pruneHistory: %v", err)
		}
	})
}

// History past its retention goes as the node starts, not an hour later:
// a node restarted more often than hourly would otherwise never delete it.
func TestHistoryPastRetentionGoesAtStart(t *testing.T) {
	r := newPruneRig(t)
	if got := r.messages(t); got != 1 {
		t.Fatalf("%d messages before the prune, want 1", got)
	}
	r.run(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	deadline := time.Now().Add(10 * time.Second)
	for r.messages(t) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a message 30 days old is still in history 10 s after the prune started, with a retention of 2 days")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A prune PostgreSQL refuses is a warning that says what to check, for the
// history and for the chat changes alike; the node runs on.
func TestPruneRefusedWarnsToCheckPostgreSQL(t *testing.T) {
	r := newPruneRig(t)
	ctx := context.Background()
	for _, q := range []string{
		`create function refuse_delete() returns trigger language plpgsql as $$ begin raise exception 'deletes refused by the test'; end $$`,
		`create trigger refuse before delete on history for each row execute function refuse_delete()`,
		`create trigger refuse before delete on chat_changes for each row execute function refuse_delete()`,
		`insert into chat_changes (kind, chat_id, users, at) select 'member', id, array['bob'], now() - interval '30 days' from chats`,
	} {
		if _, err := r.db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var logs testlog.Buffer
	r.run(t, slog.New(slog.NewTextHandler(&logs, nil)))
	want := []string{
		`msg="could not delete history past its retention; it stays until the next try (check PostgreSQL)"`,
		`msg="could not drop chat changes past the changes stream's max age; they stay until the next try (check PostgreSQL)"`,
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := logs.String()
		missing := 0
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing++
			}
		}
		if missing == 0 {
			if !strings.Contains(got, "deletes refused by the test") {
				t.Errorf("the warnings do not carry PostgreSQL's error:\n%s", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 2 warnings missing 10 s after the prune started; logs:\n%s", missing, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := r.messages(t); got != 1 {
		t.Errorf("%d messages after a refused prune, want the 1 kept", got)
	}
}
