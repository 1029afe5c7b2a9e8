package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

// countingReads counts the transactions read receipts cost.
type countingReads struct {
	s       *store.Store
	batches atomic.Int32
}

func (c *countingReads) MarkReadBatch(ctx context.Context, marks []store.ReadMark) ([]store.ReadResult, error) {
	c.batches.Add(1)
	return c.s.MarkReadBatch(ctx, marks)
}

// Receipts from many connections at once are group-committed: 60 concurrent
// receipts cost a handful of transactions, each gets its own answer, and a
// non-member's receipt fails alone.
func TestReadsGroupCommitReceipts(t *testing.T) {
	s := mustStore(t)
	members := users(60)
	chat := mustGroup(t, s, members...)
	ctx := ctxT(t, 30*time.Second)
	in := mustIngest(t, s, nil)
	r, err := in.Send(ctx, chatd.SendRequest{Chat: chat, From: members[0], Device: "d", CID: "k", Body: "hello"})
	if err != nil || r.Err != nil {
		t.Fatalf("send: %v %v", err, r.Err)
	}
	cr := &countingReads{s: s}
	reads, err := ingest.NewReads(ingest.ReadsConfig{Store: cr, BatchDelay: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reads.Run(runCtx) }()

	var wg sync.WaitGroup
	errs := make(chan error, len(members)+1)
	for _, u := range members {
		wg.Add(1)
		go func(user string) {
			defer wg.Done()
			pos, err := reads.MarkRead(ctx, user, chat, r.Message.ID)
			if err != nil || pos.Seq != 1 || pos.Upto != r.Message.ID {
				errs <- errors.Join(err, fmt.Errorf("%s: got %+v, want seq 1 upto %s", user, pos, r.Message.ID))
			}
		}(u)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := reads.MarkRead(ctx, "mallory", chat, r.Message.ID); !errors.Is(err, chatd.ErrForbidden) {
			errs <- errors.Join(err, errors.New("mallory: want ErrForbidden"))
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := cr.batches.Load(); n >= int32(len(members)/4) {
		t.Errorf("%d receipts took %d transactions: not group-committed", len(members)+1, n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := reads.MarkRead(ctx, members[0], chat, r.Message.ID); !errors.Is(err, chatd.ErrClosed) {
		t.Fatalf("after shutdown: got %v, want ErrClosed", err)
	}
}
