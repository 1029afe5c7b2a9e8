package signal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
)

// mustStore opens a store on a fresh database, closed when t ends.
func mustStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), testpg.NewDatabase(t),
		store.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// The last_seen a node keeps in memory is bounded: after many more users
// than the bound came and went, it holds at most the bound, and every
// user's last_seen is still answered, from PostgreSQL for those it let go.
func TestPresenceLastSeenBounded(t *testing.T) {
	const bound, users = 8, 40
	srv := testnats.Start(t)
	n := startPresenceNode(t, srv, "a", func(c *PresenceConfig) {
		c.LastSeen = mustStore(t)
		c.LastSeenEntries = bound
	})
	want := make(map[string]time.Time, users)
	names := make([]string, users)
	for i := range users {
		u := fmt.Sprintf("u%02d", i)
		names[i] = u
		n.p.Connected(u)
		n.waitPresence(t, 5*time.Second, u, true)
		n.p.Disconnected(u)
		want[u] = n.waitPresence(t, 5*time.Second, u, false).LastSeen
	}
	n.p.mu.Lock()
	size := len(n.p.table.lastSeen)
	n.p.mu.Unlock()
	if size > bound {
		t.Errorf("lastSeen holds %d entries after %d users came and went, want at most %d", size, users, bound)
	}

	// The offline transitions are recorded in PostgreSQL after they are
	// delivered: wait until the last one is there.
	var got []chatd.Presence
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if got, err = n.p.Lookup(context.Background(), "watcher", names); err != nil {
			t.Fatal(err)
		}
		if sameInstant(got[users-1].LastSeen, want[names[users-1]]) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, u := range names {
		if got[i].Online || !sameInstant(got[i].LastSeen, want[u]) {
			t.Errorf("%s: got online=%v last_seen %v, want offline last seen %v", u, got[i].Online, got[i].LastSeen, want[u])
		}
	}
}

// sameInstant compares a time with one that went through PostgreSQL,
// which keeps microseconds.
func sameInstant(got, want time.Time) bool {
	d := got.Sub(want)
	return !got.IsZero() && d > -time.Microsecond && d < time.Microsecond
}
