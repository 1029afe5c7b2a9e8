package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

func TestCreateGroupChat(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c, err := s.CreateGroupChat(ctx, "alice", "team", []string{"bob", "alice", "bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alice", "bob", "carol"}; !slices.Equal(c.Members, want) {
		t.Fatalf("members: got %v, want %v", c.Members, want)
	}
	if c.Kind != chatd.KindGroup || c.Title != "team" || !chatd.ValidChatID(c.ID) {
		t.Fatalf("got %+v, want a valid group chat titled team", c)
	}
	got, err := s.Chat(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Members, c.Members) || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Fatalf("read back: got %+v, want %+v", got, c)
	}
	for _, bad := range [][]string{{"bad id"}, {""}, {"x/y"}} {
		if _, err := s.CreateGroupChat(ctx, "alice", "t", bad); !errors.Is(err, chatd.ErrInvalid) {
			t.Errorf("members %q: got %v, want ErrInvalid", bad, err)
		}
	}
	long := string(make([]byte, chatd.MaxTitleLen+1))
	if _, err := s.CreateGroupChat(ctx, "alice", long, nil); !errors.Is(err, chatd.ErrInvalid) {
		t.Errorf("long title: got %v, want ErrInvalid", err)
	}
	if _, err := s.Chat(ctx, "nope"); !errors.Is(err, chatd.ErrNotFound) {
		t.Errorf("unknown chat: got %v, want ErrNotFound", err)
	}
}

func TestDirectChatIsStableAndRaceSafe(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	const callers = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]bool{}
		created int
	)
	for i := range callers {
		wg.Go(func() {
			a, b := "alice", "bob"
			if i%2 == 1 {
				a, b = b, a
			}
			c, isNew, err := s.DirectChat(ctx, a, b)
			if err != nil {
				t.Errorf("direct chat: %v", err)
				return
			}
			if !slices.Equal(c.Members, []string{"alice", "bob"}) || c.Kind != chatd.KindDirect {
				t.Errorf("got %+v, want a direct chat of alice and bob", c)
			}
			mu.Lock()
			defer mu.Unlock()
			ids[c.ID] = true
			if isNew {
				created++
			}
		})
	}
	wg.Wait()
	if len(ids) != 1 || created != 1 {
		t.Fatalf("got %d ids and %d creations, want 1 and 1", len(ids), created)
	}
	if want := store.DirectChatID("bob", "alice"); !ids[want] {
		t.Fatalf("got ids %v, want %s", ids, want)
	}
	if len(store.DirectChatID("alice", "bob")) != 42 || store.DirectChatID("a", "b") == store.DirectChatID("a", "c") {
		t.Fatal("direct chat ids must be 42 chars and differ per pair")
	}
	if _, _, err := s.DirectChat(ctx, "alice", "alice"); !errors.Is(err, chatd.ErrInvalid) {
		t.Fatalf("self chat: got %v, want ErrInvalid", err)
	}
	if n := count(t, s, `select count(*) from chats`); n != 1 {
		t.Fatalf("chats: got %d, want 1", n)
	}
}

func TestMembership(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	g := mustGroup(t, s, "alice", "bob")
	d, _, err := s.DirectChat(ctx, "alice", "carol")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"member is member", func() error { return s.IsMember(ctx, g.ID, "bob") }, nil},
		{"outsider is forbidden", func() error { return s.IsMember(ctx, g.ID, "mallory") }, chatd.ErrForbidden},
		{"unknown chat", func() error { return s.IsMember(ctx, "nope", "alice") }, chatd.ErrNotFound},
		{"add by outsider", func() error { _, err := s.AddMember(ctx, g.ID, "mallory", "eve"); return err }, chatd.ErrForbidden},
		{"add to unknown chat", func() error { _, err := s.AddMember(ctx, "nope", "alice", "eve"); return err }, chatd.ErrNotFound},
		{"add to direct chat", func() error { _, err := s.AddMember(ctx, d.ID, "alice", "eve"); return err }, chatd.ErrConflict},
		{"outsider adds to direct chat", func() error { _, err := s.AddMember(ctx, d.ID, "bob", "eve"); return err }, chatd.ErrForbidden},
		{"add bad id", func() error { _, err := s.AddMember(ctx, g.ID, "alice", "b d"); return err }, chatd.ErrInvalid},
		{"remove by outsider", func() error { return s.RemoveMember(ctx, g.ID, "mallory", "bob") }, chatd.ErrForbidden},
		{"remove from unknown chat", func() error { return s.RemoveMember(ctx, "nope", "alice", "bob") }, chatd.ErrNotFound},
		{"remove from direct chat", func() error { return s.RemoveMember(ctx, d.ID, "alice", "carol") }, chatd.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}

	c, err := s.AddMember(ctx, g.ID, "bob", "dave")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alice", "bob", "dave"}; !slices.Equal(c.Members, want) {
		t.Fatalf("after add: got %v, want %v", c.Members, want)
	}
	if _, err := s.AddMember(ctx, g.ID, "bob", "dave"); err != nil {
		t.Fatalf("adding a member twice: %v", err)
	}
	if err := s.RemoveMember(ctx, g.ID, "alice", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.IsMember(ctx, g.ID, "bob"); !errors.Is(err, chatd.ErrForbidden) {
		t.Fatalf("removed member: got %v, want ErrForbidden", err)
	}
	if err := s.RemoveMember(ctx, g.ID, "bob", "alice"); !errors.Is(err, chatd.ErrForbidden) {
		t.Fatalf("removed member acting: got %v, want ErrForbidden", err)
	}

	chats, err := s.ListChats(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chats {
		got = append(got, c.ID)
	}
	if want := []string{g.ID, d.ID}; !slices.Equal(got, want) {
		t.Fatalf("alice's chats: got %v, want %v", got, want)
	}
	if chats, _ := s.ListChats(ctx, "bob"); len(chats) != 0 {
		t.Fatalf("bob's chats after removal: got %d, want 0", len(chats))
	}
}

// A direct chat with oneself, or with an id that is not a user id, is
// refused saying what is wrong, not only that the pair is invalid.
func TestDirectChatRefusalsSayWhy(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	for _, c := range []struct{ a, b, want string }{
		{"alice", "alice", "another user"},
		{"alice", "b c", `"b c" is not a user id`},
	} {
		_, _, err := s.DirectChat(ctx, c.a, c.b)
		if !errors.Is(err, chatd.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("direct chat %q/%q: %v, want ErrInvalid saying %q", c.a, c.b, err, c.want)
		}
	}
}
