package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

// A cid is idempotent per (sender, cid) only for the same chat: reusing it
// for another chat is a conflict and stores nothing, whether the first use
// committed in an earlier batch or sits earlier in the same batch.
func TestCIDReusedInAnotherChatIsAConflict(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	a := mustGroup(t, s, "alice", "bob")
	b := mustGroup(t, s, "alice", "carol")
	c := mustGroup(t, s, "bob") // alice is not a member

	first := mustCommit(t, s, sends(a.ID, "alice", "x", 1))[0]

	reuse := sends(b.ID, "alice", "x", 1)[0]   // across batches
	resend := sends(a.ID, "alice", "x", 1)[0]  // a real resend
	inA := sends(a.ID, "alice", "y", 1)[0]     // first use in this batch
	inB := sends(b.ID, "alice", "y", 1)[0]     // same batch, other chat
	refused := sends(c.ID, "alice", "z", 1)[0] // refused: the cid stays free
	afterRefusal := sends(b.ID, "alice", "z", 1)[0]
	out, err := s.CommitBatch(ctx, []store.Send{reuse, resend, inA, inB, refused, afterRefusal})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		wantErr error
		wantDup bool
		wantSeq int64
	}{
		{"reuse across batches", chatd.ErrCIDConflict, false, 0},
		{"resend to the same chat", nil, true, first.Message.Seq},
		{"first use in the batch", nil, false, 2},
		{"reuse in the same batch", chatd.ErrCIDConflict, false, 0},
		{"refused send", chatd.ErrForbidden, false, 0},
		{"cid of a refused send", nil, false, 1},
	}
	for i, tt := range tests {
		o := out[i]
		if !errors.Is(o.Err, tt.wantErr) || (tt.wantErr == nil && o.Err != nil) {
			t.Errorf("%s: got err %v, want %v", tt.name, o.Err, tt.wantErr)
		}
		if o.Duplicate != tt.wantDup || o.Message.Seq != tt.wantSeq {
			t.Errorf("%s: got dup %v seq %d, want dup %v seq %d", tt.name, o.Duplicate, o.Message.Seq, tt.wantDup, tt.wantSeq)
		}
	}
	if n := count(t, s, `select count(*) from history where chat_id = $1`, b.ID); n != 1 {
		t.Fatalf("history rows in b: got %d, want 1 (only the refused send's cid)", n)
	}
	if n := count(t, s, `select count(*) from outbox`); n != 3 {
		t.Fatalf("outbox rows: got %d, want 3", n)
	}
	if ch, _ := s.Chat(ctx, b.ID); ch.LastSeq != 1 {
		t.Fatalf("b's last_seq: got %d, want 1", ch.LastSeq)
	}
}
