package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// testpgDSN is a fresh database for a test or benchmark.
func testpgDSN(tb testing.TB) string { return testpg.NewDatabase(tb) }

func mustStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), testpg.NewDatabase(t), store.Config{MaxConns: 12, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// mustIngest runs an Ingest over s until t ends.
func mustIngest(t *testing.T, s ingest.Committer, tweak func(*ingest.Config)) *ingest.Ingest {
	t.Helper()
	cfg := ingest.Config{Store: s, Logger: slog.New(slog.DiscardHandler)}
	if tweak != nil {
		tweak(&cfg)
	}
	in, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := in.Run(ctx); err != nil {
			t.Errorf("ingest run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return in
}

// mustGroup creates a group chat of users (the first is the creator).
func mustGroup(t *testing.T, s *store.Store, users ...string) string {
	t.Helper()
	c, err := s.CreateGroupChat(context.Background(), users[0], "t", users[1:])
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func users(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("u%d", i)
	}
	return out
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
