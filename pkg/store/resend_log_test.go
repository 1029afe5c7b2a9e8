package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
	"github.com/oklog/ulid/v2"
)

// A resend (same sender and cid) is normal traffic, not
// a fault: committing it must not make PostgreSQL raise an error, which the
// embedded server's log turns into WARN lines an operator would chase.
func TestResendLogsNoServerWarning(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	mustCommit(t, s, sends(c.ID, "alice", "k", 3))
	log := testpg.WatchLog(t)
	// Resends carry new ids, as ingest assigns them anew, in a batch with a
	// new send, and alone.
	out := mustCommit(t, s, append(sends(c.ID, "alice", "k", 2), sends(c.ID, "bob", "new", 1)...))
	if !out[0].Duplicate || !out[1].Duplicate || out[2].Duplicate {
		t.Fatalf("got duplicates %v %v %v, want true true false", out[0].Duplicate, out[1].Duplicate, out[2].Duplicate)
	}
	if out := mustCommit(t, s, sends(c.ID, "alice", "k", 1)); !out[0].Duplicate {
		t.Fatal("a resend alone: got a new message, want the original")
	}
	waitLogged(t, s, log)
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Fatalf("the server logged %s for a resend, want no warning", line)
		}
	}
}

// waitLogged returns once everything the server logged before the call is
// in log: it logs a marker of its own and waits for it.
func waitLogged(t *testing.T, s *store.Store, log *testlog.Buffer) {
	t.Helper()
	marker := "testpg-marker-" + ulid.Make().String()
	if _, err := s.Pool().Exec(context.Background(), fmt.Sprintf(`do $$ begin raise log '%s'; end $$`, marker)); err != nil {
		t.Fatalf("log a marker: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), marker) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's log never showed the marker; it holds:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
