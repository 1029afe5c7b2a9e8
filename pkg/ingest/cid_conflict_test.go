package ingest_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
)

// A cid reused for another chat, through the accept path: two sends with
// one cid to two chats in the same group-commit batch (both queued before
// Run starts, so the one worker's first batch takes both): the first is
// accepted, the second refused with chatd.ErrCIDConflict, and the second
// chat holds nothing.
func TestCIDReusedInOneBatchIsAConflict(t *testing.T) {
	s := mustStore(t)
	a := mustGroup(t, s, "alice", "bob")
	b := mustGroup(t, s, "alice", "carol")
	in, err := ingest.New(ingest.Config{Store: s, Workers: 1, BatchDelay: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan chatd.SendResult, 2)
	for _, chat := range []string{a, b} {
		if err := in.Submit(chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "x1", Body: "hi"},
			func(r chatd.SendResult) { results <- r }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	first, second := <-results, <-results
	if first.Message.Chat != a {
		first, second = second, first
	}
	if first.Err != nil || first.Duplicate || first.Message.Seq != 1 {
		t.Errorf("send to a: got %+v, want accepted at seq 1", first)
	}
	if !errors.Is(second.Err, chatd.ErrCIDConflict) {
		t.Errorf("send to b: got %+v, want a cid conflict", second)
	}
	if n := count(t, s, "history"); n != 1 {
		t.Fatalf("history rows: got %d, want 1", n)
	}
}
