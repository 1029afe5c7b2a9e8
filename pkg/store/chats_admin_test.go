package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/chatd/chatd"
)

// The admin API changes members without being one; the members' own calls
// still need an actor who is.
func TestAdminMembers(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	got, err := s.AdminAddMember(ctx, c.ID, "carol")
	if err != nil || !slices.Equal(got.Members, []string{"alice", "bob", "carol"}) {
		t.Fatalf("admin add: got %v %v, want alice, bob, carol", got.Members, err)
	}
	if err := s.AdminRemoveMember(ctx, c.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.IsMember(ctx, c.ID, "bob"); !errors.Is(err, chatd.ErrForbidden) {
		t.Fatalf("bob after the admin removed him: %v, want ErrForbidden", err)
	}
	if _, err := s.AddMember(ctx, c.ID, "", "dave"); !errors.Is(err, chatd.ErrForbidden) {
		t.Fatalf("AddMember without an actor: %v, want ErrForbidden", err)
	}
	if err := s.RemoveMember(ctx, c.ID, "", "alice"); !errors.Is(err, chatd.ErrForbidden) {
		t.Fatalf("RemoveMember without an actor: %v, want ErrForbidden", err)
	}
	d, _, err := s.DirectChat(ctx, "alice", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdminAddMember(ctx, d.ID, "carol"); !errors.Is(err, chatd.ErrConflict) {
		t.Fatalf("admin add to a direct chat: %v, want ErrConflict", err)
	}
	if _, err := s.AdminAddMember(ctx, "nochat", "carol"); !errors.Is(err, chatd.ErrNotFound) {
		t.Fatalf("admin add to an unknown chat: %v, want ErrNotFound", err)
	}
}

// A system send needs no membership; any other send from a non-member is
// refused. Both take the chat's seq in commit order.
func TestSystemSendFromANonMember(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	batch := append(sends(c.ID, "backend", "sys", 1), sends(c.ID, "backend", "plain", 1)...)
	batch[0].System = true
	out, err := s.CommitBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Err != nil || out[0].Message.Seq != 1 || out[0].Message.From != "backend" ||
		!slices.Equal(out[0].Recipients, []string{"alice", "bob"}) {
		t.Fatalf("system send: %+v, want seq 1 from backend to alice and bob", out[0])
	}
	if !errors.Is(out[1].Err, chatd.ErrForbidden) {
		t.Fatalf("plain send from a non-member: %v, want ErrForbidden", out[1].Err)
	}
}
