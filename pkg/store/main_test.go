package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
	"github.com/oklog/ulid/v2"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// quiet keeps expected warnings (reconnects) out of test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// mustOpen opens a Store on a fresh database.
func mustOpen(t testing.TB) (*store.Store, string) {
	t.Helper()
	dsn := testpg.NewDatabase(t)
	return mustOpenDSN(t, dsn), dsn
}

// mustOpenDSN opens another Store on dsn and closes it at cleanup.
func mustOpenDSN(t testing.TB, dsn string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// mustGroup creates a group chat of creator and members.
func mustGroup(t testing.TB, s *store.Store, creator string, members ...string) chatd.Chat {
	t.Helper()
	c, err := s.CreateGroupChat(context.Background(), creator, "test", members)
	if err != nil {
		t.Fatalf("create group chat: %v", err)
	}
	return c
}

// sends builds n sends from one sender into one chat with cids prefix-0.. .
func sends(chat, from, prefix string, n int) []store.Send {
	out := make([]store.Send, n)
	for i := range out {
		out[i] = store.Send{ID: ulid.Make().String(), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: chat, From: from, Device: "phone", CID: fmt.Sprintf("%s-%d", prefix, i), Body: fmt.Sprintf("body %s %d", prefix, i)}}
	}
	return out
}

// mustCommit commits a batch and fails on a batch error or any per-message error.
func mustCommit(t testing.TB, s *store.Store, batch []store.Send) []store.Outcome {
	t.Helper()
	out, err := s.CommitBatch(context.Background(), batch)
	if err != nil {
		t.Fatalf("commit batch: %v", err)
	}
	for i, o := range out {
		if o.Err != nil {
			t.Fatalf("outcome %d: %v", i, o.Err)
		}
	}
	return out
}

// count returns select count(*) of a query.
func count(t testing.TB, s *store.Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
