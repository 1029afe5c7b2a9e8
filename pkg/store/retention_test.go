package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// age makes every message of chat d old as of now.
func age(t *testing.T, s *store.Store, chat string, now time.Time, d time.Duration) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(),
		`update history set created_at = $2 where chat_id = $1`, chat, now.Add(-d)); err != nil {
		t.Fatal(err)
	}
}

// Retention never deletes a message that is still in the
// PostgreSQL outbox (accepted, not yet relayed: NATS may have been down for
// longer than the retention); once relayed, it is pruned like any other.
func TestPruneKeepsMessagesNotYetRelayed(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	mustFill(t, s, c.ID, "alice", 3)
	now := time.Now()
	age(t, s, c.ID, now, 10*24*time.Hour)

	n, err := s.PruneHistory(ctx, 7*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || count(t, s, `select count(*) from history`) != 3 {
		t.Fatalf("pruned %d, history rows %d: want 0 pruned and 3 kept while their outbox rows wait",
			n, count(t, s, `select count(*) from history`))
	}
	entries, err := s.ReadOutbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteOutbox(ctx, []int64{entries[0].ID, entries[1].ID}); err != nil { // relayed
		t.Fatal(err)
	}
	if n, err := s.PruneHistory(ctx, 7*24*time.Hour, now); err != nil || n != 2 {
		t.Fatalf("after relaying two: pruned %d (%v), want 2", n, err)
	}
	if got := count(t, s, `select count(*) from outbox`); got != 1 {
		t.Fatalf("outbox rows: got %d, want the unrelayed one", got)
	}
}

// The database itself refuses to delete a history row that has an outbox
// row (migration 002; a per-statement check since migration 008), whoever deletes.
func TestHistoryRowWithOutboxRowCannotBeDeleted(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice")
	mustFill(t, s, c.ID, "alice", 1)
	_, err := s.Pool().Exec(context.Background(), `delete from history`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("delete history with its outbox row: got %v, want a foreign key violation (23503)", err)
	}
}

// Nodes started together prune together: two stores deleting the same old
// history at once both finish without an error (neither deadlocks on the
// other's rows), and nothing past its retention is left.
func TestConcurrentPrunesFinish(t *testing.T) {
	s, dsn := mustOpen(t)
	other := mustOpenDSN(t, dsn)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	now := time.Now()
	const rows = 12_000 // more than two of PruneHistory's chunks of 5,000
	for round := range 3 {
		if _, err := s.Pool().Exec(ctx, `
			insert into history (msg_id, chat_id, seq, sender, device, cid, body, created_at)
			select 'm' || $2::int || '-' || g, $1, $2::int * $3::int + g, 'alice', 'd', 'c' || $2::int || '-' || g, 'old', $4::timestamptz
			from generate_series(1, $3::int) g`, c.ID, round, rows, now.Add(-30*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var pruned [2]int64
		var errs [2]error
		for i, st := range []*store.Store{s, other} {
			wg.Go(func() { pruned[i], errs[i] = st.PruneHistory(ctx, 7*24*time.Hour, now) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: prune %d: %v", round, i, err)
			}
		}
		t.Logf("round %d: the two prunes deleted %d and %d", round, pruned[0], pruned[1])
		if left := count(t, s, `select count(*) from history`); left != 0 || pruned[0]+pruned[1] != rows {
			t.Fatalf("round %d: the two prunes deleted %d and %d of %d, %d left", round, pruned[0], pruned[1], rows, left)
		}
	}
}
