package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/store"
)

// A batch does not wait for a chat another transaction holds (another
// node's batch) before committing its other chats: those are stored while
// the held chat is still held, and the held chat's sends are committed, in
// order and with the next seqs, once it is free.
func TestHeldChatDoesNotHoldUpTheBatchsOtherChats(t *testing.T) {
	s, _ := mustOpen(t)
	held := mustGroup(t, s, "alice", "bob")
	free := mustGroup(t, s, "alice", "bob")
	mustCommit(t, s, sends(held.ID, "alice", "before", 2))

	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "select 1 from chats where id = $1 for no key update", held.ID); err != nil {
		t.Fatal(err)
	}

	batch := append(sends(held.ID, "alice", "h", 2), sends(free.ID, "bob", "f", 2)...)
	batch = append(batch, sends(held.ID, "bob", "h2", 1)...)
	type result struct {
		out []store.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.CommitBatch(ctx, batch)
		done <- result{out, err}
	}()
	testwait.For(t, 10*time.Second, "the free chat's sends stored while the other chat is held", func() bool {
		return count(t, s, "select count(*) from history where chat_id = $1", free.ID) == 2
	})
	if n := count(t, s, "select count(*) from history where chat_id = $1", held.ID); n != 2 {
		t.Fatalf("held chat has %d messages while held, want the 2 from before", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch did not finish once the chat was free")
	}
	if r.err != nil {
		t.Fatalf("commit batch: %v", r.err)
	}
	want := []struct {
		chat string
		seq  int64
	}{{held.ID, 3}, {held.ID, 4}, {free.ID, 1}, {free.ID, 2}, {held.ID, 5}}
	for i, o := range r.out {
		if o.Err != nil || o.Duplicate {
			t.Fatalf("send %d: err %v duplicate %v", i, o.Err, o.Duplicate)
		}
		if o.Message.Chat != want[i].chat || o.Message.Seq != want[i].seq || o.Message.CID != batch[i].CID {
			t.Errorf("send %d (%s): chat %s seq %d, want chat %s seq %d", i, batch[i].CID, o.Message.Chat, o.Message.Seq, want[i].chat, want[i].seq)
		}
	}
	if n := count(t, s, "select count(*) from outbox"); n != 7 {
		t.Errorf("%d outbox rows, want 7", n)
	}
	if n := count(t, s, "select last_seq from chats where id = $1", held.ID); n != 5 {
		t.Errorf("held chat's last_seq %d, want 5", n)
	}
}

// Three nodes (three Stores on one database) commit batches over the same
// chats at once, so their batches keep finding chats the others hold: every
// send is stored once, each chat's seqs are gapless, and each node's sends
// to a chat keep their order.
func TestNodesCommittingTheSameChatsKeepEveryChatInOrder(t *testing.T) {
	s, dsn := mustOpen(t)
	const nodes, rounds, perChat = 3, 30, 2
	chats := make([]string, 6)
	for i := range chats {
		chats[i] = mustGroup(t, s, "n0", "n1", "n2").ID
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type sent struct {
		chat string
		seq  int64
	}
	got := make([][]sent, nodes) // each node's accepted sends, in its order
	var wg sync.WaitGroup
	for n := range nodes {
		st := mustOpenDSN(t, dsn)
		wg.Go(func() {
			from := fmt.Sprintf("n%d", n)
			for r := range rounds {
				var batch []store.Send
				for k := range chats {
					// Each node walks the chats from another start.
					c := chats[(k+n*2)%len(chats)]
					batch = append(batch, sends(c, from, fmt.Sprintf("r%d-%s", r, c), perChat)...)
				}
				out, err := st.CommitBatch(ctx, batch)
				if err != nil {
					t.Errorf("node %d round %d: %v", n, r, err)
					return
				}
				for i, o := range out {
					if o.Err != nil || o.Duplicate || o.Message.Chat != batch[i].Chat {
						t.Errorf("node %d send %s: err %v duplicate %v chat %s", n, batch[i].CID, o.Err, o.Duplicate, o.Message.Chat)
						return
					}
					got[n] = append(got[n], sent{o.Message.Chat, o.Message.Seq})
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for n, sends := range got {
		last := make(map[string]int64)
		for _, x := range sends {
			if x.seq <= last[x.chat] {
				t.Fatalf("node %d: chat %s seq %d after %d, want its sends in order", n, x.chat, x.seq, last[x.chat])
			}
			last[x.chat] = x.seq
		}
	}
	want := int64(nodes * rounds * perChat)
	for _, c := range chats {
		var lo, hi, distinct int64
		if err := s.Pool().QueryRow(ctx, `select min(seq), max(seq), count(distinct seq) from history where chat_id = $1`, c).
			Scan(&lo, &hi, &distinct); err != nil {
			t.Fatal(err)
		}
		if lo != 1 || hi != want || distinct != want {
			t.Errorf("chat %s: seqs %d..%d, %d distinct, want 1..%d", c, lo, hi, distinct, want)
		}
	}
	if n := count(t, s, "select count(*) from outbox"); n != int64(nodes*rounds*perChat*len(chats)) {
		t.Errorf("%d outbox rows, want %d", n, nodes*rounds*perChat*len(chats))
	}
}
