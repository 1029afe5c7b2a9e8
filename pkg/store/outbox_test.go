package store_test

import (
	"context"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/store"
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

// listenWakes runs s.ListenOutbox until the test ends and returns the node
// each wake named ("" for a (re)connect); wakes beyond its buffer are dropped.
func listenWakes(t *testing.T, s *store.Store) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wakes := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- s.ListenOutbox(ctx, func(node string) {
			select {
			case wakes <- node:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listen returned %v, want nil", err)
		}
	})
	return wakes
}

func TestListenOutboxWakesOnCommit(t *testing.T) {
	s1, dsn := mustOpen(t)
	// Another node: its commits' notifications name it.
	s2, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet, NodeID: "node-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Close)
	c := mustGroup(t, s2, "alice")
	wakes := listenWakes(t, s1)
	waitWake := func(what, node string) {
		t.Helper()
		select {
		case got := <-wakes:
			if got != node {
				t.Fatalf("wake %s named node %q, want %q", what, got, node)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake %s", what)
		}
	}
	waitWake("after connecting", "")
	// A commit through another Store (another node) wakes this one.
	mustCommit(t, s2, sends(c.ID, "alice", "a", 1))
	waitWake("after a commit", "node-b")

	// The listener survives losing its connection.
	var killed int
	if err := s2.Pool().QueryRow(context.Background(), `select count(pg_terminate_backend(pid)) from pg_stat_activity
		where datname = current_database() and query = 'listen chatd_outbox'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the listener: killed %d (%v), want 1", killed, err)
	}
	waitWake("after reconnecting", "")
	drain := time.After(200 * time.Millisecond)
	for draining := true; draining; {
		select {
		case <-wakes:
		case <-drain:
			draining = false
		}
	}
	mustCommit(t, s2, sends(c.ID, "alice", "b", 1))
	waitWake("after a commit on the new connection", "node-b")
}

// A commit sends its notification only while Config.Notify says so (a node
// whose own relay leads needs none).
func TestCommitNotifiesOnlyWhenAsked(t *testing.T) {
	s1, dsn := mustOpen(t)
	var notify atomic.Bool
	s2, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet, NodeID: "node-b", Notify: notify.Load})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Close)
	c := mustGroup(t, s2, "alice")
	wakes := listenWakes(t, s1)
	if got := <-wakes; got != "" {
		t.Fatalf("wake on connecting named %q", got)
	}

	mustCommit(t, s2, sends(c.ID, "alice", "quiet", 3))
	select {
	case got := <-wakes:
		t.Fatalf("a commit with Notify false woke the listener (node %q)", got)
	case <-time.After(500 * time.Millisecond):
	}
	notify.Store(true)
	mustCommit(t, s2, sends(c.ID, "alice", "loud", 3))
	select {
	case got := <-wakes:
		if got != "node-b" {
			t.Fatalf("wake named %q, want node-b", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a commit with Notify true did not wake the listener")
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
