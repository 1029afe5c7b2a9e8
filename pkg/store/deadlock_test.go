package store_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

// A read batch and a commit batch over the same chats must never deadlock.
// The read batch's read_state inserts take a key-share lock on each chat
// row (the foreign key); a commit batch locks its chats to allocate seqs.
// With FOR UPDATE those conflict, and marks in another order than the
// commit's chat order deadlocked: each loser cost PostgreSQL's 1 s
// deadlock_timeout and failed a whole batch (found by chatload's mixed
// scenario: `deadlock detected (SQLSTATE 40P01)` under reads and sends).
func TestReadBatchesAndCommitBatchesDoNotDeadlock(t *testing.T) {
	s, _ := mustOpen(t)
	const nChats = 8
	chats := make([]chatd.Chat, nChats)
	first := make([]string, nChats)
	for i := range chats {
		chats[i] = mustGroup(t, s, "alice", "bob")
		first[i] = mustFill(t, s, chats[i].ID, "alice", 1)[0].ID
	}
	// Marks in descending chat id order, the opposite of the commit's.
	idx := make([]int, nChats)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return chats[idx[a]].ID > chats[idx[b]].ID })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const rounds = 60
	errs := make(chan error, 4*rounds)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var batch []store.Send
				for i := range chats {
					batch = append(batch, sends(chats[i].ID, "alice", fmt.Sprintf("w%d-r%d-c%d", w, r, i), 1)...)
				}
				if _, err := s.CommitBatch(ctx, batch); err != nil {
					errs <- fmt.Errorf("commit batch: %w", err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			user := []string{"alice", "bob"}[w]
			for r := 0; r < rounds; r++ {
				marks := make([]store.ReadMark, 0, nChats)
				for _, i := range idx {
					marks = append(marks, store.ReadMark{User: user, Chat: chats[i].ID, Upto: first[i]})
				}
				if _, err := s.MarkReadBatch(ctx, marks); err != nil {
					errs <- fmt.Errorf("read batch: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
