package store_test

import (
	"context"
	"slices"
	"testing"
)

// Contacts are the users sharing a chat with the user, each once, never the
// user; chats over the size bound do not count.
func TestContacts(t *testing.T) {
	s, _ := mustOpen(t)
	mustGroup(t, s, "alice", "bob", "carol")
	mustGroup(t, s, "alice", "bob")
	mustGroup(t, s, "dave", "erin", "frank", "alice") // 4 members
	tests := []struct {
		name       string
		user       string
		maxMembers int
		want       []string
	}{
		{"every chat", "alice", 256, []string{"bob", "carol", "dave", "erin", "frank"}},
		{"large chats left out", "alice", 3, []string{"bob", "carol"}},
		{"a user in one small chat", "carol", 256, []string{"alice", "bob"}},
		{"nobody", "zed", 256, nil},
	}
	for _, tt := range tests {
		got, err := s.Contacts(context.Background(), tt.user, tt.maxMembers)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// ContactsAmong is Contacts restricted to the users asked about.
func TestContactsAmong(t *testing.T) {
	s, _ := mustOpen(t)
	mustGroup(t, s, "alice", "bob", "carol")
	mustGroup(t, s, "dave", "erin", "frank", "alice") // 4 members
	tests := []struct {
		name       string
		user       string
		among      []string
		maxMembers int
		want       []string
	}{
		{"some contacts, a stranger and the user", "alice", []string{"bob", "erin", "mallory", "alice"}, 256, []string{"bob", "erin"}},
		{"large chats left out", "alice", []string{"bob", "erin"}, 3, []string{"bob"}},
		{"a stranger asking", "mallory", []string{"alice", "bob"}, 256, nil},
		{"nobody asked about", "alice", nil, 256, nil},
	}
	for _, tt := range tests {
		got, err := s.ContactsAmong(context.Background(), tt.user, tt.among, tt.maxMembers)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
