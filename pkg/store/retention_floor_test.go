package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
)

// A per-chat retention shorter than the delivery stream's max age is refused
// where it is set, and one set behind the store's back is not honoured below
// that floor by prune.
func TestChatRetentionIsNotShorterThanTheStream(t *testing.T) {
	ctx := context.Background()
	const streamMaxAge = 26 * time.Hour
	s, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quiet, MinChatRetention: streamMaxAge})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := mustGroup(t, s, "alice")

	tests := []struct {
		name string
		d    time.Duration
		want error
	}{
		{"below the stream's max age", time.Hour, chatd.ErrInvalid},
		{"negative", -time.Hour, chatd.ErrInvalid},
		{"equal to the stream's max age", streamMaxAge, nil},
		{"longer", 30 * 24 * time.Hour, nil},
		{"server default", 0, nil},
	}
	for _, tt := range tests {
		err := s.SetChatRetention(ctx, c.ID, tt.d)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := s.SetChatRetention(ctx, "nochat", 48*time.Hour); !errors.Is(err, chatd.ErrNotFound) {
		t.Errorf("unknown chat: got %v, want not found", err)
	}

	// Set by hand to 30 minutes: prune still keeps what the stream may hold.
	if _, err := s.Pool().Exec(ctx, `update chats set retention = interval '30 minutes' where id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	mustFill(t, s, c.ID, "alice", 2)
	if _, err := s.Pool().Exec(ctx, `delete from outbox`); err != nil { // relayed
		t.Fatal(err)
	}
	now := time.Now()
	age(t, s, c.ID, now, 2*time.Hour)
	if n, err := s.PruneHistory(ctx, 90*24*time.Hour, now); err != nil || n != 0 {
		t.Fatalf("2 h old, chat retention 30 min, stream 26 h: pruned %d (%v), want 0", n, err)
	}
	age(t, s, c.ID, now, 27*time.Hour)
	if n, err := s.PruneHistory(ctx, 90*24*time.Hour, now); err != nil || n != 2 {
		t.Fatalf("27 h old: pruned %d (%v), want 2", n, err)
	}
}
