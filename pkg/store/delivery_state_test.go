package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/chatd/chatd/pkg/store"
)

func TestReachedIsTheGreaterOfDeliveredAndRead(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob", "carol")
	msgs := mustFill(t, s, c.ID, "alice", 5)
	if _, err := s.MarkRead(ctx, "carol", c.ID, msgs[3].ID); err != nil {
		t.Fatal(err)
	}
	err := s.RecordDelivered(ctx, []store.Delivered{
		{User: "bob", Chat: c.ID, Seq: 2}, {User: "bob", Chat: c.ID, Seq: 3}, {User: "carol", Chat: c.ID, Seq: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	// An older position recorded later does not move it back.
	if err := s.RecordDelivered(ctx, []store.Delivered{{User: "bob", Chat: c.ID, Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Reached(ctx, []string{"bob", "carol", "dave", "bob"}, []string{c.ID, c.ID, c.ID, "other"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{3, 4, 0, 0}; !slices.Equal(got, want) {
		t.Fatalf("Reached = %v, want %v (bob delivered 3, carol read 4, dave nothing, bob nothing elsewhere)", got, want)
	}
}

func TestUnreadCountsPerUserAndChat(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	a := mustGroup(t, s, "alice", "bob")
	b := mustGroup(t, s, "alice", "bob", "carol")
	msgs := mustFill(t, s, a.ID, "alice", 4)
	mustFill(t, s, b.ID, "alice", 2)
	mustFill(t, s, b.ID, "bob", 1)
	if _, err := s.MarkRead(ctx, "bob", a.ID, msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.Unread(ctx, []string{"bob", "carol", "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got["bob"][a.ID] != 3 || got["bob"][b.ID] != 2 || got["carol"][b.ID] != 3 || len(got["carol"]) != 1 {
		t.Fatalf("unread = %v, want bob %s:3 %s:2, carol %s:3", got, a.ID, b.ID, b.ID)
	}
	if got["alice"][b.ID] != 1 || got["alice"][a.ID] != 0 {
		t.Fatalf("alice's unread = %v, want only bob's one message in %s", got["alice"], b.ID)
	}
}
