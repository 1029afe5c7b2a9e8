package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A reaction rewrites its target message's row. With full history pages
// every rewrite was a new row version on another page plus an entry in each
// of history's indexes; migration 7's fillfactor keeps room on the page, so
// the rewrites of a message that keeps getting reactions while new messages
// fill the table stay heap-only (HOT) updates.
func TestReactionRewritesStayOnTheirPage(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	target := mustFill(t, s, c.ID, "alice", 1)[0]
	const rounds = 30
	for r := 0; r < rounds; r++ {
		// 60 messages fill more than the page the target's row is on.
		mustCommit(t, s, sends(c.ID, "alice", fmt.Sprintf("r%d", r), 60))
		o := commitOne(t, s, react(c.ID, "bob", fmt.Sprintf("x%d", r), target.ID, "👍", r%2 == 0))
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	// Table statistics reach pg_stat_user_tables within about a second of
	// each backend's transaction (PostgreSQL 15 flushes them when idle).
	var upd, hot int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Pool().QueryRow(context.Background(),
			`select n_tup_upd, n_tup_hot_upd from pg_stat_user_tables where relname = 'history'`).Scan(&upd, &hot)
		if err != nil {
			t.Fatal(err)
		}
		if upd >= rounds || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if upd < rounds {
		t.Fatalf("history shows %d updates after %d reactions: statistics did not arrive", upd, rounds)
	}
	if hot*10 < upd*9 {
		t.Fatalf("%d of %d rewrites of the target were heap-only updates, want at least 90%%: each of the others added an entry to every history index", hot, upd)
	}
	t.Logf("%d of %d rewrites heap-only", hot, upd)
}
