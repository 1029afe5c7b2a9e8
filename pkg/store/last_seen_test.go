package store_test

import (
	"context"
	"testing"
	"time"
)

// Every node records an offline transition, in any order: the latest time
// stays; users never recorded are absent.
func TestLastSeenKeepsTheLatest(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, rec := range []struct {
		user string
		at   time.Time
	}{
		{"alice", t0.Add(2 * time.Second)},
		{"alice", t0}, // an older report from a slower node
		{"bob", t0.Add(time.Second)},
		{"bob", t0.Add(3 * time.Second)},
	} {
		if err := s.RecordLastSeen(ctx, rec.user, rec.at); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LastSeen(ctx, []string{"alice", "bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{"alice": t0.Add(2 * time.Second), "bob": t0.Add(3 * time.Second)}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for u, at := range want {
		if !got[u].Equal(at) {
			t.Errorf("%s: got %v, want %v", u, got[u], at)
		}
	}
}
