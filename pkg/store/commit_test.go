package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
)

func TestCommitBatchStoresHistoryAndOutbox(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	a := mustGroup(t, s, "alice", "bob", "carol")
	b := mustGroup(t, s, "bob")
	batch := []store.Send{
		sends(a.ID, "alice", "a", 1)[0],
		sends(b.ID, "bob", "b", 1)[0],
		sends("nope", "alice", "n", 1)[0],
		sends(b.ID, "alice", "f", 1)[0], // alice is not in b
		sends(a.ID, "bob", "c", 1)[0],
	}
	out, err := s.CommitBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []error{nil, nil, chatd.ErrNotFound, chatd.ErrForbidden, nil}
	wantSeq := []int64{1, 1, 0, 0, 2}
	for i, o := range out {
		if !errors.Is(o.Err, wantErr[i]) || (wantErr[i] == nil && o.Err != nil) {
			t.Errorf("outcome %d: got err %v, want %v", i, o.Err, wantErr[i])
		}
		if o.Message.Seq != wantSeq[i] {
			t.Errorf("outcome %d: got seq %d, want %d", i, o.Message.Seq, wantSeq[i])
		}
	}
	if !slices.Equal(out[0].Recipients, []string{"alice", "bob", "carol"}) || out[0].OutboxID == 0 {
		t.Fatalf("outcome 0: got recipients %v outbox %d, want all members and an outbox id", out[0].Recipients, out[0].OutboxID)
	}
	if n := count(t, s, `select count(*) from history`); n != 3 {
		t.Fatalf("history rows: got %d, want 3", n)
	}
	entries, err := s.ReadOutbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("outbox rows: got %d, want 3", len(entries))
	}
	e := entries[0]
	if e.ID != out[0].OutboxID || !reflect.DeepEqual(e.Message, out[0].Message) || !slices.Equal(e.Recipients, out[0].Recipients) {
		t.Fatalf("outbox entry: got %+v, want %+v", e, out[0].Accepted)
	}
	if c, _ := s.Chat(ctx, a.ID); c.LastSeq != 2 {
		t.Fatalf("last_seq: got %d, want 2", c.LastSeq)
	}
	if out, err := s.CommitBatch(ctx, nil); err != nil || out != nil {
		t.Fatalf("empty batch: got %v, %v", out, err)
	}
}

func TestCommitBatchIsIdempotentOnSenderCID(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	orig := sends(c.ID, "alice", "k", 2)
	first := mustCommit(t, s, orig)

	// A resend carries a new ULID and timestamp, as ingest assigns them anew.
	resend := sends(c.ID, "alice", "k", 2)
	resend[0].Body = "changed"
	more := sends(c.ID, "bob", "k", 1) // same cid, other sender: a new message
	// The same (from, cid) twice in one batch: the second is a duplicate of the first.
	twice := sends(c.ID, "alice", "t", 1)[0]
	again := twice
	again.ID = sends(c.ID, "alice", "t", 1)[0].ID
	out := mustCommit(t, s, append(resend, more[0], twice, again))

	for i := range 2 {
		if !out[i].Duplicate || !reflect.DeepEqual(out[i].Message, first[i].Message) || out[i].OutboxID != 0 {
			t.Errorf("resend %d: got %+v, want a duplicate of %+v", i, out[i].Accepted, first[i].Message)
		}
	}
	if out[2].Duplicate || out[2].Message.Seq != 3 {
		t.Errorf("other sender: got %+v, want new message seq 3", out[2].Accepted)
	}
	if out[3].Duplicate || out[3].Message.Seq != 4 {
		t.Errorf("first of a pair: got %+v, want new message seq 4", out[3].Accepted)
	}
	if !out[4].Duplicate || !reflect.DeepEqual(out[4].Message, out[3].Message) {
		t.Errorf("second of a pair: got %+v, want a duplicate of %+v", out[4].Accepted, out[3].Message)
	}
	if n := count(t, s, `select count(*) from history`); n != 4 {
		t.Fatalf("history rows: got %d, want 4", n)
	}
	if n := count(t, s, `select count(*) from outbox`); n != 4 {
		t.Fatalf("outbox rows: got %d, want 4", n)
	}
}

// One cid racing into two chats through two concurrent batches is stored
// once: the batches lock different chats, so the loser hits the (sender, cid)
// constraint, retries, and refuses its send as a cid conflict (not, as it
// once did, answering it with the other chat's message).
func TestCommitBatchConcurrentCIDReuse(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	x := mustGroup(t, s, "alice")
	y := mustGroup(t, s, "alice")
	for round := range 20 {
		a := sends(x.ID, "alice", fmt.Sprintf("r%d", round), 8)
		b := sends(y.ID, "alice", fmt.Sprintf("r%d", round), 8)
		var wg sync.WaitGroup
		var outA, outB []store.Outcome
		var errA, errB error
		wg.Go(func() { outA, errA = s.CommitBatch(ctx, a) })
		wg.Go(func() { outB, errB = s.CommitBatch(ctx, b) })
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("round %d: %v / %v", round, errA, errB)
		}
		for i := range a {
			won, lost := outA[i], outB[i]
			if won.Err != nil {
				won, lost = lost, won
			}
			if won.Err != nil || won.Duplicate || won.Message.Seq == 0 || !errors.Is(lost.Err, chatd.ErrCIDConflict) {
				t.Fatalf("round %d send %d: got %+v (%v) and %+v (%v), want one accepted and one cid conflict",
					round, i, outA[i].Accepted, outA[i].Err, outB[i].Accepted, outB[i].Err)
			}
		}
	}
	if n := count(t, s, `select count(*) from history`); n != 20*8 {
		t.Fatalf("history rows: got %d, want %d", n, 20*8)
	}
}

// docs/architecture.md, invariant 5: 8 concurrent committers into one chat get
// seqs exactly 1..N, each committer sees its own seqs rise, and a reader paging
// by after_seq while they write never sees a gap (seq order is commit order).
func TestSeqIsGaplessInCommitOrder(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7")
	const writers, batches, size = 8, 25, 20
	const total = writers * batches * size

	readerDone := make(chan error, 1)
	writing := make(chan struct{})
	go func() { readerDone <- pageWhileWriting(ctx, s, c.ID, writing, total) }()

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			from := fmt.Sprintf("w%d", w)
			var last int64
			for b := range batches {
				out, err := s.CommitBatch(ctx, sends(c.ID, from, fmt.Sprintf("b%d", b), size))
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				for _, o := range out {
					if o.Err != nil || o.Message.Seq <= last {
						t.Errorf("writer %d: got seq %d (err %v) after %d, want a higher one", w, o.Message.Seq, o.Err, last)
						return
					}
					last = o.Message.Seq
				}
			}
		})
	}
	wg.Wait()
	close(writing)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	var minSeq, maxSeq, n int64
	if err := s.Pool().QueryRow(ctx, `select min(seq), max(seq), count(distinct seq) from history where chat_id = $1`, c.ID).
		Scan(&minSeq, &maxSeq, &n); err != nil {
		t.Fatal(err)
	}
	if minSeq != 1 || maxSeq != total || n != total {
		t.Fatalf("seqs: got min %d max %d distinct %d, want 1..%d", minSeq, maxSeq, n, total)
	}
	// The outbox, read in id order, carries the chat in seq order too.
	entries, err := s.ReadOutbox(ctx, store.MaxOutboxLimit)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Message.Seq != int64(i+1) {
			t.Fatalf("outbox entry %d: got seq %d, want %d", i, e.Message.Seq, i+1)
		}
	}
}

// pageWhileWriting pages the chat by after_seq until it has read want
// messages after writing closed, and fails on any gap or repeat.
func pageWhileWriting(ctx context.Context, s *store.Store, chat string, writing <-chan struct{}, want int64) error {
	var cursor int64
	for {
		done := false
		select {
		case <-writing:
			done = true
		default:
		}
		msgs, _, err := s.History(ctx, chat, chatd.HistoryQuery{AfterSeq: cursor, Limit: 50})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Seq != cursor+1 {
				return fmt.Errorf("reader at seq %d got seq %d: a gap", cursor, m.Seq)
			}
			cursor = m.Seq
		}
		if done && len(msgs) == 0 {
			if cursor != want {
				return fmt.Errorf("reader ended at seq %d, want %d", cursor, want)
			}
			return nil
		}
	}
}

// blockChatUpdates installs a trigger that makes the batch's last_seq update
// wait on advisory lock 4242 — after its history and outbox inserts — and
// holds that lock on another connection until release is called.
func blockChatUpdates(t *testing.T, s *store.Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `
		create function block_chats() returns trigger language plpgsql as
			$$ begin perform pg_advisory_xact_lock(4242); return new; end $$;
		create trigger block_chats before update on chats for each row execute function block_chats();`); err != nil {
		t.Fatal(err)
	}
	holder, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `select pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			holder.Exec(ctx, `select pg_advisory_unlock(4242)`) //nolint:errcheck
			holder.Release()
			if _, err := s.Pool().Exec(ctx, `drop trigger block_chats on chats`); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitForBlockedBatch returns the backend pid of the batch waiting in the trigger.
func waitForBlockedBatch(t *testing.T, s *store.Store) int32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var pid int32
		err := s.Pool().QueryRow(context.Background(), `select pid from pg_stat_activity
			where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`).Scan(&pid)
		if err == nil {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no batch blocked in the trigger")
	return 0
}

// docs/architecture.md, invariant 1: a batch whose transaction dies after its
// history and outbox inserts leaves neither, and the chat's seqs stay gapless
// afterwards.
func TestFailedBatchLeavesNothing(t *testing.T) {
	tests := []struct {
		name string
		kill func(t *testing.T, s *store.Store, pid int32, cancel context.CancelFunc)
	}{
		{"backend terminated", func(t *testing.T, s *store.Store, pid int32, _ context.CancelFunc) {
			var ok bool
			if err := s.Pool().QueryRow(context.Background(), `select pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
				t.Fatalf("terminate backend %d: %v %v", pid, ok, err)
			}
		}},
		{"context canceled", func(_ *testing.T, _ *store.Store, _ int32, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := mustOpen(t)
			c := mustGroup(t, s, "alice", "bob")
			release := blockChatUpdates(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			batch := sends(c.ID, "alice", "k", 36)
			errc := make(chan error, 1)
			go func() {
				_, err := s.CommitBatch(ctx, batch)
				errc <- err
			}()
			pid := waitForBlockedBatch(t, s)
			// The batch has inserted its rows; kill it before it commits.
			tt.kill(t, s, pid, cancel)
			if err := <-errc; err == nil {
				t.Fatal("commit batch: got nil, want an error")
			}
			release()
			if n := count(t, s, `select count(*) from history`); n != 0 {
				t.Fatalf("history rows: got %d, want 0", n)
			}
			if n := count(t, s, `select count(*) from outbox`); n != 0 {
				t.Fatalf("outbox rows: got %d, want 0", n)
			}
			// The resend is stored in full, from seq 1.
			out := mustCommit(t, s, batch)
			if out[0].Duplicate || out[0].Message.Seq != 1 || out[35].Message.Seq != 36 {
				t.Fatalf("resend: got seqs %d..%d (dup %v), want 1..36", out[0].Message.Seq, out[35].Message.Seq, out[0].Duplicate)
			}
		})
	}
}

// Outbox ids follow batch order, so the relay (which publishes by id)
// sends each chat's messages in seq order, and every outcome names the
// outbox row of its own message.
func TestOutboxIDsFollowBatchOrder(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	var batch []store.Send
	chats := []string{mustGroup(t, s, "alice", "bob").ID, mustGroup(t, s, "alice", "carol").ID, mustGroup(t, s, "alice").ID}
	for i := 0; i < 48; i++ {
		batch = append(batch, sends(chats[(i*7)%3], "alice", fmt.Sprintf("o%d", i), 1)[0])
	}
	out := mustCommit(t, s, batch)
	for i := 1; i < len(out); i++ {
		if out[i].OutboxID <= out[i-1].OutboxID {
			t.Fatalf("send %d has outbox id %d after send %d's %d: not in batch order", i, out[i].OutboxID, i-1, out[i-1].OutboxID)
		}
	}
	entries, err := s.ReadOutbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(out) {
		t.Fatalf("outbox rows: got %d, want %d", len(entries), len(out))
	}
	for i, e := range entries {
		if e.ID != out[i].OutboxID || e.Message.ID != out[i].Message.ID || e.Message.Seq != out[i].Message.Seq {
			t.Fatalf("outbox row %d: id %d message %s seq %d; outcome: id %d message %s seq %d",
				i, e.ID, e.Message.ID, e.Message.Seq, out[i].OutboxID, out[i].Message.ID, out[i].Message.Seq)
		}
	}
}

// A database whose collation sorts text unlike Go (hosted PostgreSQL is
// often en-US) must not make a member look like a stranger: the commit
// checks membership by binary search over the chat's members, which it
// sorts by bytes itself. "Bob" sorts after "alice" in en-US and before it
// in bytes.
func TestCommitBatchFindsMembersWhateverTheCollation(t *testing.T) {
	s := mustOpenDSN(t, testpg.NewDatabaseCollated(t, "en-US"))
	ctx := context.Background()
	members := []string{"alice", "Bob", "a_b", "A-c", "ab", "Zed"}
	c := mustGroup(t, s, members[0], members[1:]...)
	var batch []store.Send
	for i, m := range members {
		batch = append(batch, sends(c.ID, m, fmt.Sprintf("m%d", i), 1)[0])
	}
	out, err := s.CommitBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(members))
	for i, o := range out {
		if o.Err != nil {
			t.Errorf("send from member %s: %v", members[i], o.Err)
			continue
		}
		if !slices.Equal(o.Recipients, want) {
			t.Errorf("send from %s: recipients %v, want %v (sorted by bytes)", members[i], o.Recipients, want)
		}
	}
	if got, err := s.Chat(ctx, c.ID); err != nil || !slices.Equal(got.Members, want) {
		t.Errorf("chat members: got %v (err %v), want %v (sorted by bytes)", got.Members, err, want)
	}
}
