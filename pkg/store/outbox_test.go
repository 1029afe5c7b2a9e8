package store_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestOutboxReadAndDeleteByIDs(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	if st, err := s.OutboxStats(ctx); err != nil || st.Depth != 0 || !st.Oldest.IsZero() {
		t.Fatalf("empty stats: got %+v (%v), want zero", st, err)
	}
	before := time.Now().Add(-time.Second)
	out := mustCommit(t, s, sends(c.ID, "alice", "k", 10))

	st, err := s.OutboxStats(ctx)
	if err != nil || st.Depth != 10 || st.Oldest.Before(before) || st.Oldest.After(time.Now().Add(time.Second)) {
		t.Fatalf("stats: got %+v (%v), want depth 10 and a recent oldest", st, err)
	}
	first, err := s.ReadOutbox(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, e := range first {
		if e.ID != out[i].OutboxID || !reflect.DeepEqual(e.Message, out[i].Message) || e.Message.Device != "phone" {
			t.Fatalf("entry %d: got %+v, want %+v", i, e, out[i].Accepted)
		}
		ids = append(ids, e.ID)
	}
	// Relay deletes a non-prefix set: exactly those rows go, lower ones stay.
	del := []int64{ids[1], ids[3], 1 << 40}
	if n, err := s.DeleteOutbox(ctx, del); err != nil || n != 2 {
		t.Fatalf("delete: got %d (%v), want 2", n, err)
	}
	rest, err := s.ReadOutbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, e := range rest {
		got = append(got, e.ID)
	}
	var want []int64
	for i, o := range out {
		if i != 1 && i != 3 {
			want = append(want, o.OutboxID)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("remaining ids: got %v, want %v", got, want)
	}
	if n, err := s.DeleteOutbox(ctx, nil); err != nil || n != 0 {
		t.Fatalf("delete nothing: got %d (%v)", n, err)
	}
	// History is untouched by outbox deletes.
	if n := count(t, s, `select count(*) from history`); n != 10 {
		t.Fatalf("history rows: got %d, want 10", n)
	}
}

func TestRelayLockIsExclusiveAcrossStores(t *testing.T) {
	s1, dsn := mustOpen(t)
	s2 := mustOpenDSN(t, dsn)
	ctx := context.Background()

	l1, ok, err := s1.TryRelayLock(ctx)
	if err != nil || !ok {
		t.Fatalf("first lock: got %v (%v), want held", ok, err)
	}
	if _, ok, err := s2.TryRelayLock(ctx); err != nil || ok {
		t.Fatalf("second store: got %v (%v), want not held", ok, err)
	}
	if _, ok, err := s1.TryRelayLock(ctx); err != nil || ok {
		t.Fatalf("same store again: got %v (%v), want not held", ok, err)
	}
	if err := l1.Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}
	// The lock lives on a hijacked connection: the pool's connections
	// being recycled must not touch it.
	s1.Pool().Reset()
	if _, ok, _ := s2.TryRelayLock(ctx); ok {
		t.Fatal("lock lost when the pool was reset")
	}
	l1.Release()
	l1.Release() // idempotent
	if err := l1.Check(ctx); err == nil {
		t.Fatal("check after release: got nil, want an error")
	}
	l2, ok, err := s2.TryRelayLock(ctx)
	if err != nil || !ok {
		t.Fatalf("after release: got %v (%v), want held", ok, err)
	}
	defer l2.Release()

	// Killing the holder's session frees the lock and Check reports it.
	if _, err := s1.Pool().Exec(ctx, `select pg_terminate_backend(pid) from pg_locks
		where locktype = 'advisory' and granted and pid <> pg_backend_pid() and database = (select oid from pg_database where datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	if err := l2.Check(ctx); err == nil {
		t.Fatal("check after the session was killed: got nil, want an error")
	}
	// The killed backend exits asynchronously; the lock frees when it has.
	deadline := time.Now().Add(10 * time.Second)
	for {
		l3, ok, err := s1.TryRelayLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			l3.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after the holder died: lock still not free")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// No commit sends a PostgreSQL notification. PostgreSQL serializes every
// transaction that notifies, through its commit's WAL flush, on one lock
// for the whole server: nodes sharing the database committed one after the
// other and lost their group commit (docs/benchmarks-log.md, "The cluster's
// commits queued on PostgreSQL's notification lock"). Relays are woken over
// NATS instead (stream.RelayConfig.WakeSubject).
func TestCommitSendsNoNotification(t *testing.T) {
	s, dsn := mustOpen(t)
	ctx := context.Background()
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close(context.Background()) })
	// The channel earlier versions notified on.
	if _, err := listener.Exec(ctx, "listen chatd_outbox"); err != nil {
		t.Fatal(err)
	}
	c := mustGroup(t, s, "alice")
	mustCommit(t, s, sends(c.ID, "alice", "a", 3))
	wait, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if n, err := listener.WaitForNotification(wait); err == nil {
		t.Fatalf("a commit notified channel %q (payload %q): every notifying commit in the cluster waits for the one before it", n.Channel, n.Payload)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait for a notification: %v", err)
	}
}

func TestOutboxStatsOldest(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice")
	mustCommit(t, s, sends(c.ID, "alice", "a", 1))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.Pool().Exec(ctx, `update outbox set created_at = $1`, old); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, sends(c.ID, "alice", "b", 1))
	st, err := s.OutboxStats(ctx)
	if err != nil || st.Depth != 2 || !st.Oldest.Equal(old) {
		t.Fatalf("got %+v (%v), want depth 2 oldest %v", st, err, old)
	}
}

// A row set aside leaves the outbox with everything the operator needs, the
// rows around it stay, and setting it aside again is harmless.
func TestSetAsideOutboxMovesTheRow(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	out := mustCommit(t, s, sends(c.ID, "alice", "k", 3))
	bad := out[1].OutboxID
	for range 2 {
		if err := s.SetAsideOutbox(ctx, bad, "nats: maximum payload exceeded"); err != nil {
			t.Fatal(err)
		}
	}
	rest, err := s.ReadOutbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 2 || rest[0].ID != out[0].OutboxID || rest[1].ID != out[2].OutboxID {
		t.Fatalf("outbox after set-aside: got %+v, want rows %d and %d", rest, out[0].OutboxID, out[2].OutboxID)
	}
	var msgID, reason string
	var recipients []string
	if err := s.Pool().QueryRow(ctx, `select h.msg_id, a.recipients, a.reason from outbox_set_aside a
		join history h on h.id = a.history_id where a.id = $1`, bad).Scan(&msgID, &recipients, &reason); err != nil {
		t.Fatal(err)
	}
	if msgID != out[1].Message.ID || len(recipients) != 2 || reason != "nats: maximum payload exceeded" {
		t.Fatalf("set-aside row: got %s %v %q, want %s, 2 recipients and the reason", msgID, recipients, reason, out[1].Message.ID)
	}
}
