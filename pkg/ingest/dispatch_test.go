package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

// lockWatch is the real store with a record of which chats the batches
// committing right now touch: it reports a batch that shares a chat with
// one still committing (which would wait on that chat's row lock).
type lockWatch struct {
	*store.Store
	mu          sync.Mutex
	inFlight    map[string]int // chat -> batches committing it now
	batches     int            // committing now
	maxBatches  int            // most at once
	overlaps    int            // batches that shared a chat with another
	firstShared string
}

func (w *lockWatch) CommitBatch(ctx context.Context, sends []store.Send) ([]store.Outcome, error) {
	chats := make(map[string]bool)
	for _, s := range sends {
		chats[s.Chat] = true
	}
	w.mu.Lock()
	w.batches++
	w.maxBatches = max(w.maxBatches, w.batches)
	for c := range chats {
		if w.inFlight[c] > 0 {
			w.overlaps++
			if w.firstShared == "" {
				w.firstShared = c
			}
		}
		w.inFlight[c]++
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.batches--
		for c := range chats {
			w.inFlight[c]--
		}
		w.mu.Unlock()
	}()
	return w.Store.CommitBatch(ctx, sends)
}

// Concurrent batches never hold the same chat: the dispatcher keeps a
// chat's sends back while a batch with that chat commits, so the four
// workers commit in parallel instead of queueing on each other's chat
// locks. The test also checks that batches did overlap in time, or it
// would prove nothing.
func TestConcurrentBatchesNeverShareAChat(t *testing.T) {
	s := mustStore(t)
	const chats, each = 40, 50
	ids := make([]string, chats)
	for i := range ids {
		ids[i] = mustGroup(t, s, "alice", "bob")
	}
	w := &lockWatch{Store: s, inFlight: make(map[string]int)}
	in := mustIngest(t, w, func(c *ingest.Config) { c.Workers = 4; c.BatchSize = 8 })

	var wg sync.WaitGroup
	var failed atomic.Int32
	for k := 0; k < each; k++ {
		for i, chat := range ids {
			wg.Add(1)
			req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprintf("c%d-%d", i, k), Body: "x"}
			if err := in.Submit(req, func(r chatd.SendResult) {
				defer wg.Done()
				if r.Err != nil {
					failed.Add(1)
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d sends failed", n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.overlaps > 0 {
		t.Fatalf("%d batches locked a chat another batch was committing (first: %s)", w.overlaps, w.firstShared)
	}
	if w.maxBatches < 2 {
		t.Fatalf("at most %d batch committed at a time: the workers never ran concurrently, so this proves nothing", w.maxBatches)
	}
	t.Logf("up to %d batches committed at once, none sharing a chat", w.maxBatches)
}

// One sender's sends into one chat, submitted one after another without
// waiting for answers, get seqs in submission order: a chat's sends leave
// the dispatcher in order and only one batch holds the chat at a time.
// With workers taking batches from a shared queue, a later batch could
// take the chat's lock first.
func TestSubmissionOrderIsSeqOrderWithinAChat(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	other := mustGroup(t, s, "bob", "carol")
	in := mustIngest(t, s, func(c *ingest.Config) { c.Workers = 4; c.BatchSize = 4 })
	const n = 600
	seqs := make([]int64, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(2)
		req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprintf("o%d", i), Body: "x"}
		if err := in.Submit(req, func(r chatd.SendResult) {
			defer wg.Done()
			if r.Err != nil {
				t.Errorf("send %d: %v", i, r.Err)
			}
			seqs[i] = r.Message.Seq
		}); err != nil {
			t.Fatal(err)
		}
		// Traffic in another chat keeps the other workers busy meanwhile.
		req = chatd.SendRequest{Chat: other, From: "bob", Device: "d", CID: fmt.Sprintf("b%d", i), Body: "y"}
		if err := in.Submit(req, func(chatd.SendResult) { wg.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("send %d got seq %d after send %d got %d: not in submission order", i, seqs[i], i-1, seqs[i-1])
		}
	}
}
