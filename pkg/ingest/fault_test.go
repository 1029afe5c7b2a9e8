package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
	"github.com/jackc/pgx/v5"
)

func count(t *testing.T, s *store.Store, table string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// docs/architecture.md, invariant 1 and G1: a batch whose transaction dies
// (its backend is killed after the history and outbox inserts ran, before
// commit) leaves neither history nor outbox rows, and none of its senders is
// told `accepted`. The same cids resent afterwards are stored once, with seqs
// from 1.
func TestKilledBatchLeavesNothingAndAcceptsNobody(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	ctx := ctxT(t, 30*time.Second)
	// Hold every batch inside its transaction, after the outbox insert.
	for _, q := range []string{
		`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$`,
		`CREATE TRIGGER hold AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION hold()`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	in := mustIngest(t, s, func(c *ingest.Config) { c.BatchDelay = 50 * time.Millisecond })
	const n = 5
	results := make(chan chatd.SendResult, n)
	for i := 0; i < n; i++ {
		req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprint("k", i), Body: "x"}
		if err := in.Submit(req, func(r chatd.SendResult) { results <- r }); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := pgx.Connect(ctx, testpg.Server().DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	testwait.Until(t, "the batch to sit in the trigger", func() bool {
		var held int
		_ = admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()`).Scan(&held)
		return held > 0
	})
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := <-results
		if r.Err == nil || !errors.Is(r.Err, chatd.ErrUnavailable) {
			t.Fatalf("sender of a killed batch got %+v, want ErrUnavailable and no accepted", r)
		}
	}
	if h, o := count(t, s, "history"), count(t, s, "outbox"); h != 0 || o != 0 {
		t.Fatalf("killed batch left %d history and %d outbox rows", h, o)
	}
	if _, err := s.Pool().Exec(ctx, `DROP TRIGGER hold ON outbox`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r, err := in.Send(ctx, chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprint("k", i), Body: "x"})
		if err != nil || r.Err != nil || r.Duplicate || r.Message.Seq != int64(i+1) {
			t.Fatalf("resend %d: %v %+v, want seq %d fresh", i, err, r, i+1)
		}
	}
}

// PostgreSQL restarted during a send storm: senders get errors or no answer
// and resend with the same cid; afterwards every accepted message is stored
// exactly once, seqs are gapless, and the same Ingest works again without
// a restart of its own.
func TestPostgresRestartDuringSendStorm(t *testing.T) {
	const senders, each = 4, 300
	s := mustStore(t)
	members := users(senders)
	chat := mustGroup(t, s, members...)
	in := mustIngest(t, s, func(c *ingest.Config) { c.CommitTimeout = 3 * time.Second })
	ctx := ctxT(t, 2*time.Minute)

	var mu sync.Mutex
	accepted := make(map[string]string) // message id -> sender/cid
	var wg sync.WaitGroup
	progress := make(chan struct{}, senders*each)
	for _, u := range members {
		wg.Add(1)
		go func(user string) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				cid := fmt.Sprint("k", i)
				r := sendUntilAccepted(ctx, t, in, chatd.SendRequest{Chat: chat, From: user, Device: "d", CID: cid, Body: "x"})
				mu.Lock()
				if prev, dup := accepted[r.Message.ID]; dup && prev != user+"/"+cid {
					t.Errorf("id %s answered for two sends", r.Message.ID)
				}
				accepted[r.Message.ID] = user + "/" + cid
				mu.Unlock()
				progress <- struct{}{}
			}
		}(u)
	}
	for i := 0; i < senders*each/3; i++ {
		<-progress
	}
	if err := testpg.Server().Restart(ctx); err != nil {
		t.Fatalf("restart postgres: %v", err)
	}
	wg.Wait()
	if len(accepted) != senders*each {
		t.Fatalf("accepted %d distinct messages, want %d", len(accepted), senders*each)
	}
	msgs, _, err := s.History(ctx, chat, chatd.HistoryQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var all = msgs
	for len(msgs) == 1000 {
		if msgs, _, err = s.History(ctx, chat, chatd.HistoryQuery{AfterSeq: all[len(all)-1].Seq, Limit: 1000}); err != nil {
			t.Fatal(err)
		}
		all = append(all, msgs...)
	}
	if len(all) != senders*each {
		t.Fatalf("history holds %d messages, want %d (nothing lost, nothing twice)", len(all), senders*each)
	}
	for i, m := range all {
		if m.Seq != int64(i+1) {
			t.Fatalf("history position %d has seq %d: gap", i, m.Seq)
		}
		if _, ok := accepted[m.ID]; !ok {
			t.Fatalf("history has %s that no sender was told about", m.ID)
		}
	}
}

// sendUntilAccepted resends with the same cid until the send is accepted,
// as a client does after an error or a lost answer.
func sendUntilAccepted(ctx context.Context, t *testing.T, in *ingest.Ingest, req chatd.SendRequest) chatd.SendResult {
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := in.Send(attempt, req)
		cancel()
		if err == nil && r.Err == nil {
			return r
		}
		if ctx.Err() != nil {
			t.Errorf("send %s/%s never accepted: %v %v", req.From, req.CID, err, r.Err)
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}
