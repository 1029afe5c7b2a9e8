package store

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/oklog/ulid/v2"
)

// The first attempt at a batch does not look duplicates up (CommitBatch):
// fresh sends commit without the lookup, while a resend, or a send refused
// for another reason, ends the attempt with an error CommitBatch retries
// with the lookup, and the attempt stores nothing.
func TestFirstAttemptLeavesDuplicatesToTheRetry(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testpg.NewDatabase(t), Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.CreateGroupChat(ctx, "alice", "t", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(from, cid string) Send {
		return Send{ID: ulid.Make().String(), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: c.ID, From: from, Device: "d", CID: cid, Body: "b"}}
	}
	stored := func() int64 {
		var n int64
		if err := s.pool.QueryRow(ctx, `select count(*) from history`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if _, err := s.commitOnce(ctx, []Send{send("alice", "1"), send("bob", "1")}, false, false); err != nil {
		t.Fatalf("fresh sends without the lookup: %v", err)
	}
	want := int64(2)
	for _, tt := range []struct {
		name  string
		batch []Send
	}{
		{"a resend", []Send{send("alice", "2"), send("alice", "1")}},
		{"a non-member's send", []Send{send("alice", "3"), send("carol", "1")}},
	} {
		_, err := s.commitOnce(ctx, tt.batch, false, false)
		if err == nil || !retryable(err) {
			t.Fatalf("%s without the lookup: got %v, want an error CommitBatch retries", tt.name, err)
		}
		if n := stored(); n != want {
			t.Fatalf("after %s: %d history rows, want %d: the attempt stored something", tt.name, n, want)
		}
		out, err := s.commitOnce(ctx, tt.batch, true, false)
		if err != nil || out[0].Err != nil || out[0].Duplicate || out[1].Err == nil && !out[1].Duplicate {
			t.Fatalf("%s with the lookup: got %v, %+v", tt.name, err, out)
		}
		want++
		if n := stored(); n != want {
			t.Fatalf("after %s with the lookup: %d history rows, want %d", tt.name, n, want)
		}
	}
}
