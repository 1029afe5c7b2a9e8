package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

func TestMarkReadOnlyMovesForward(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	other := mustGroup(t, s, "alice")
	msgs := mustFill(t, s, c.ID, "alice", 5)
	otherMsgs := mustFill(t, s, other.ID, "alice", 1)

	steps := []struct {
		name    string
		user    string
		chat    string
		msg     string
		wantSeq int64
		wantErr error
	}{
		{"first mark", "bob", c.ID, msgs[2].ID, 3, nil},
		{"forward", "bob", c.ID, msgs[3].ID, 4, nil},
		{"backward keeps the newer", "bob", c.ID, msgs[0].ID, 4, nil},
		{"another user is separate", "alice", c.ID, msgs[0].ID, 1, nil},
		{"unknown message", "bob", c.ID, "01NOPE", 0, chatd.ErrNotFound},
		{"message of another chat", "alice", c.ID, otherMsgs[0].ID, 0, chatd.ErrNotFound},
		{"non-member", "carol", c.ID, msgs[0].ID, 0, chatd.ErrForbidden},
		{"unknown chat", "bob", "nope", msgs[0].ID, 0, chatd.ErrNotFound},
	}
	for _, tt := range steps {
		seq, err := s.MarkRead(ctx, tt.user, tt.chat, tt.msg)
		if seq != tt.wantSeq || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: got %d, %v; want %d, %v", tt.name, seq, err, tt.wantSeq, tt.wantErr)
		}
	}
	var upto string
	if err := s.Pool().QueryRow(ctx, `select upto_msg_id from read_state where user_id = 'bob' and chat_id = $1`, c.ID).Scan(&upto); err != nil || upto != msgs[3].ID {
		t.Fatalf("stored upto: got %s (%v), want %s", upto, err, msgs[3].ID)
	}
}

// A batch of marks is one transaction with one result per mark, in order;
// a bad mark fails alone and the others are stored.
func TestMarkReadBatchResultsPerMark(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	msgs := mustFill(t, s, c.ID, "alice", 3)
	marks := []store.ReadMark{
		{User: "bob", Chat: c.ID, Upto: msgs[1].ID},
		{User: "carol", Chat: c.ID, Upto: msgs[1].ID},
		{User: "alice", Chat: c.ID, Upto: msgs[2].ID},
		{User: "bob", Chat: "nope", Upto: msgs[1].ID},
		{User: "bob", Chat: c.ID, Upto: msgs[0].ID}, // older than the first mark in this batch
	}
	want := []struct {
		seq int64
		err error
	}{{2, nil}, {0, chatd.ErrForbidden}, {3, nil}, {0, chatd.ErrNotFound}, {2, nil}}
	got, err := s.MarkReadBatch(ctx, marks)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got[i].Seq != w.seq || !errors.Is(got[i].Err, w.err) || (w.err == nil && got[i].Err != nil) {
			t.Errorf("mark %d: got %d, %v; want %d, %v", i, got[i].Seq, got[i].Err, w.seq, w.err)
		}
	}
}

func TestPruneHistoryHonoursPerChatRetention(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	def := mustGroup(t, s, "alice")
	short := mustGroup(t, s, "alice")
	long := mustGroup(t, s, "alice")
	for _, c := range []string{def.ID, short.ID, long.ID} {
		mustFill(t, s, c, "alice", 10)
	}
	now := time.Now()
	// In each chat, seqs 1..5 are 10 days old and 6..10 are 1 hour old.
	if _, err := s.Pool().Exec(ctx, `update history set created_at = $1::timestamptz - case when seq <= 5 then interval '10 days' else interval '1 hour' end`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `update chats set retention = case id when $1 then interval '30 minutes' when $2 then interval '30 days' end where id in ($1, $2)`, short.ID, long.ID); err != nil {
		t.Fatal(err)
	}
	// Relayed: retention never takes an unrelayed message (retention_test.go).
	if _, err := s.Pool().Exec(ctx, `delete from outbox`); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneHistory(ctx, 7*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5+10 {
		t.Fatalf("pruned: got %d, want 15", n)
	}
	for _, tt := range []struct {
		chat    string
		want    int64
		oldest  int64
		comment string
	}{
		{def.ID, 5, 6, "default 7 days"},
		{short.ID, 0, 0, "30 minutes"},
		{long.ID, 10, 1, "30 days"},
	} {
		if got := count(t, s, `select count(*) from history where chat_id = $1`, tt.chat); got != tt.want {
			t.Errorf("%s: got %d rows, want %d", tt.comment, got, tt.want)
		}
		if got := count(t, s, `select coalesce(min(seq), 0) from history where chat_id = $1`, tt.chat); got != tt.oldest {
			t.Errorf("%s: oldest seq %d, want %d", tt.comment, got, tt.oldest)
		}
	}
	if n, err := s.PruneHistory(ctx, 7*24*time.Hour, now); err != nil || n != 0 {
		t.Fatalf("second prune: got %d (%v), want 0", n, err)
	}
}
