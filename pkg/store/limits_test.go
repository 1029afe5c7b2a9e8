package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/store"
)

// A send whose stream envelope would exceed the broker's
// largest message is refused before commit (it would stop the relay for
// every chat); it stores nothing and takes no seq.
func TestCommitRefusesAnEnvelopeOverTheLimit(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	const limit = 1000
	batch := sends(c.ID, "alice", "e", 4)
	batch[0].Body = strings.Repeat("<", 200)    // 1200 bytes once escaped
	batch[1].Body = strings.Repeat("\x01", 200) // likewise
	batch[2].Body = strings.Repeat("x", 200)    // fits
	batch[3].Body = strings.Repeat("<", 200)    // no limit: not checked
	for i := range 3 {
		batch[i].MaxEnvelopeBytes = limit
	}
	out, err := s.CommitBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{chatd.ErrTooLarge, chatd.ErrTooLarge, nil, nil} {
		if !errors.Is(out[i].Err, want) || (want == nil && out[i].Err != nil) {
			t.Errorf("send %d: got %v, want %v", i, out[i].Err, want)
		}
	}
	if out[2].Message.Seq != 1 || out[3].Message.Seq != 2 {
		t.Errorf("seqs: got %d, %d, want 1, 2 (refused sends take none)", out[2].Message.Seq, out[3].Message.Seq)
	}
	if n := count(t, s, `select count(*) from history where cid in ('e-0', 'e-1')`); n != 0 {
		t.Fatalf("refused sends stored %d rows, want 0", n)
	}
	// What was accepted fits: its real envelope is within the limit.
	entries, err := s.ReadOutbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := chatd.Envelope{OutboxID: entries[0].ID, Message: entries[0].Message, Device: entries[0].Message.Device, Recipients: entries[0].Recipients}
	if got := codec.EnvelopeSize(&env); got > limit {
		t.Fatalf("accepted envelope is %d bytes, over %d", got, limit)
	}
}

// Group size is capped when a group is created and when members are added.
func TestGroupSizeIsCapped(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quiet, MaxGroupMembers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.CreateGroupChat(ctx, "alice", "t", []string{"bob", "carol", "dave"}); !errors.Is(err, chatd.ErrTooManyMembers) {
		t.Fatalf("create with 4 members: got %v, want too many members", err)
	}
	// The creator named again and repeats count once.
	c, err := s.CreateGroupChat(ctx, "alice", "t", []string{"alice", "bob", "carol", "bob"})
	if err != nil {
		t.Fatalf("create with 3 members: %v", err)
	}
	if _, err := s.AddMember(ctx, c.ID, "alice", "dave"); !errors.Is(err, chatd.ErrTooManyMembers) {
		t.Fatalf("add a 4th: got %v, want too many members", err)
	}
	if _, err := s.AddMember(ctx, c.ID, "alice", "bob"); err != nil {
		t.Fatalf("add a present member to a full group: %v", err)
	}
	if err := s.RemoveMember(ctx, c.ID, "alice", "carol"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.AddMember(ctx, c.ID, "alice", "dave"); err != nil || len(got.Members) != 3 {
		t.Fatalf("add after a removal: got %v (%v), want 3 members", got.Members, err)
	}
	// The default cap is store.DefaultMaxGroupMembers.
	d, _ := mustOpen(t)
	many := make([]string, store.DefaultMaxGroupMembers)
	for i := range many {
		many[i] = fmt.Sprintf("u%d", i)
	}
	if _, err := d.CreateGroupChat(ctx, "zed", "t", many); !errors.Is(err, chatd.ErrTooManyMembers) {
		t.Fatalf("create over the default cap: got %v, want too many members", err)
	}
}
