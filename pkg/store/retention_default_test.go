package store_test

import (
	"context"
	"testing"
	"time"
)

// A zero server default keeps history forever: only a chat that set its own
// retention loses old messages.
func TestPruneHistoryZeroDefaultKeepsHistory(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	kept := mustGroup(t, s, "alice")
	own := mustGroup(t, s, "alice")
	for _, c := range []string{kept.ID, own.ID} {
		mustFill(t, s, c, "alice", 10)
	}
	now := time.Now()
	if _, err := s.Pool().Exec(ctx, `update history set created_at = $1::timestamptz - interval '400 days'`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `update chats set retention = interval '30 days' where id = $1`, own.ID); err != nil {
		t.Fatal(err)
	}
	// Relayed: retention never takes an unrelayed message (retention_test.go).
	if _, err := s.Pool().Exec(ctx, `delete from outbox`); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneHistory(ctx, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Errorf("pruned: got %d, want 10 (the chat with its own retention)", n)
	}
	if got := count(t, s, `select count(*) from history where chat_id = $1`, kept.ID); got != 10 {
		t.Errorf("chat on the server default: got %d rows, want all 10 kept", got)
	}
	if got := count(t, s, `select count(*) from history where chat_id = $1`, own.ID); got != 0 {
		t.Errorf("chat with 30 days' retention: got %d rows, want 0", got)
	}
}
