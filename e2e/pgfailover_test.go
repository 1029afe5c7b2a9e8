package e2e_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testpgha"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// failoverSender sends to one chat until stopped, resending a refused send
// with the same cid (the contract's rule), and records what it was told.
type failoverSender struct {
	p    *peer
	chat string
	name string
	gap  time.Duration // between messages; zero means 10 ms

	mu       sync.Mutex
	accepted []client.Accepted
	at       []time.Time       // when each accepted answer arrived
	refused  map[wire.Code]int // rejected answers by code
	other    map[string]int    // errors that are not a rejected frame
}

// run sends until ctx ends. ctx is checked only between messages: a send
// under way is resent until accepted, so every message the recipient gets
// is one the sender saw accepted.
func (s *failoverSender) run(ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for i := 0; ctx.Err() == nil; i++ {
		cid := fmt.Sprintf("%s-%d", s.name, i)
		for time.Now().Before(deadline) {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			acc, err := s.p.c.SendCID(sctx, s.chat, cid, cid)
			cancel()
			if err == nil {
				s.mu.Lock()
				s.accepted = append(s.accepted, acc)
				s.at = append(s.at, time.Now())
				s.mu.Unlock()
				break
			}
			var rej *client.RejectedError
			s.mu.Lock()
			if errors.As(err, &rej) {
				s.refused[rej.Code]++
			} else {
				s.other[err.Error()]++
			}
			s.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(cmp.Or(s.gap, 10*time.Millisecond))
	}
}

func (s *failoverSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accepted)
}

// firstAfter is when the first send accepted after t was answered.
func (s *failoverSender) firstAfter(t time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range s.at {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// A node on a multi-host URL in front of a primary and a synchronous
// standby survives the primary's loss: the primary is SIGKILLed under load
// and the standby promoted; every acked message is in history on the new
// primary and reaches its recipient exactly once in seq order (live or from
// history), the relay drains the outbox again, and sends in flight at the
// loss are refused `unavailable` (resend with the same cid), never
// `overloaded`.
func TestPostgresFailoverSyncStandby(t *testing.T) {
	pair := testpgha.Start(t, testpgha.Config{Sync: true})
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	rn := mustRunNode(t, nodeConfig(pair.URL("chatd"), ns.ClientURL(), "n1", node.Config{}))

	const pairs = 3
	var senders []*failoverSender
	var recipients []*peer
	for i := range pairs {
		from, to := fmt.Sprintf("alice%d", i), fmt.Sprintf("bob%d", i)
		sp := mustPeer(t, rn.URL(), from, "", nil)
		rp := mustPeer(t, rn.URL(), to, "", nil)
		sp.waitConnected(t, 1)
		rp.waitConnected(t, 1)
		senders = append(senders, &failoverSender{p: sp, chat: sp.mustDirect(t, to), name: from,
			refused: map[wire.Code]int{}, other: map[string]int{}})
		recipients = append(recipients, rp)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range senders {
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, s := range senders {
		testwait.For(t, 20*time.Second, "sends before the loss", func() bool { return s.count() >= 20 })
	}

	timeline := rn.metric(t, "chatd_postgres_timeline")
	if timeline < 1 {
		t.Fatalf("chatd_postgres_timeline %v before the failover, want the primary's (1 or more)", timeline)
	}
	pair.Primary.Kill(t)
	killed := time.Now()
	// Long enough for every sender to meet the missing primary.
	time.Sleep(time.Second)
	pair.Standby.Promote(t)
	promoted := time.Now()
	before := make([]int, pairs)
	for i, s := range senders {
		before[i] = s.count()
	}
	for i, s := range senders {
		testwait.For(t, 30*time.Second, "sends after the promotion", func() bool { return s.count() >= before[i]+20 })
	}
	stop()
	wg.Wait()

	first := time.Time{}
	for _, s := range senders {
		if at, ok := s.firstAfter(promoted); ok && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	t.Logf("primary killed; promoted %v later; first send accepted %v after the promotion",
		promoted.Sub(killed).Round(time.Millisecond), first.Sub(promoted).Round(time.Millisecond))
	// The failover shows once in the metrics: the new primary's timeline.
	if got := rn.metric(t, "chatd_postgres_timeline"); got != timeline+1 {
		t.Errorf("chatd_postgres_timeline %v after one failover, want %v", got, timeline+1)
	}

	// Every acked message is on the new primary.
	conn, err := pgx.Connect(context.Background(), pair.Standby.DSN("chatd"))
	if err != nil {
		t.Fatalf("connect to the new primary: %v", err)
	}
	defer conn.Close(context.Background())
	total := 0
	for i, s := range senders {
		ids := idsAfter(0, s.accepted)
		total += len(ids)
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM history WHERE msg_id = ANY($1)", ids).Scan(&n); err != nil {
			t.Fatalf("count history: %v", err)
		}
		if n != len(ids) {
			t.Errorf("%s: %d of %d acked messages in history on the new primary (lost %d)", s.name, n, len(ids), len(ids)-n)
		}
		// Reached the recipient once each, contiguous from seq 1.
		recipients[i].reconcile(t, s.chat, 1, ids, 30*time.Second)
		t.Logf("%s: %d accepted, refused %v, other errors %v", s.name, len(ids), s.refused, s.other)
		if n := s.refused[wire.CodeOverloaded]; n > 0 {
			t.Errorf("%s: %d sends refused overloaded while the database failed over; want unavailable", s.name, n)
		}
	}
	t.Logf("%d messages acked, 0 lost", total)
	testwait.For(t, 20*time.Second, "outbox drained on the new primary", func() bool { return rn.outboxDepth(t) == 0 })
}

// With an asynchronous standby a failover can lose the last commits, which
// the relay already published and a recipient already holds. The new
// primary must not hand their seqs out again: the node raises every chat's
// next seq past what it saw before it takes a send, so the loss is a gap
// (history holds neither message) and never a second message under a seq
// a client already has. A client that missed the lost seqs skips them
// when history answers past them.
func TestPostgresFailoverAsyncStandbyNeverReusesSeq(t *testing.T) {
	pair := testpgha.Start(t, testpgha.Config{Sync: false})
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	rn := mustRunNode(t, nodeConfig(pair.URL("chatd"), ns.ClientURL(), "n1", node.Config{}))
	alice := mustPeer(t, rn.URL(), "alice", "", nil)
	bob := mustPeer(t, rn.URL(), "bob", "", nil)
	alice.waitConnected(t, 1)
	bob.waitConnected(t, 1)
	chat := alice.mustDirect(t, "bob")

	kept := alice.sendN(t, chat, "kept", 10, 0)
	// The standby has replayed them (event, not a sleep): they survive.
	standby, err := pgx.Connect(context.Background(), pair.Standby.DSN("chatd"))
	if err != nil {
		t.Fatalf("connect to the standby: %v", err)
	}
	testwait.For(t, 10*time.Second, "standby replayed the first messages", func() bool {
		var n int
		err := standby.QueryRow(context.Background(), "SELECT count(*) FROM history WHERE chat_id = $1", chat).Scan(&n)
		return err == nil && n == len(kept)
	})
	standby.Close(context.Background())

	// Replication stops; the primary acks more, which bob receives live.
	pair.Standby.Stop(t)
	lost := alice.sendN(t, chat, "lost", 5, 0)
	testwait.For(t, 10*time.Second, "bob received the messages the standby missed", func() bool {
		return len(bob.log(chat)) == len(kept)+len(lost)
	})
	lastLost := lost[len(lost)-1].Seq

	pair.Primary.Kill(t)
	pair.Standby.Start(t)
	pair.Standby.Promote(t)

	var after []client.Accepted
	for i := range 5 {
		cid := fmt.Sprintf("after-%d", i)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			acc, err := alice.c.SendCID(ctx, chat, cid, cid)
			cancel()
			if err == nil {
				after = append(after, acc)
				break
			}
			var rej *client.RejectedError
			if errors.As(err, &rej) && !rej.Temporary() {
				t.Fatalf("send %s after the failover: %v", cid, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if after[0].Seq <= lastLost {
		t.Errorf("first send after the failover got seq %d, want above %d (the last seq handed out before the loss)", after[0].Seq, lastLost)
	}

	// bob never holds two messages under one seq.
	testwait.For(t, 10*time.Second, "bob received the messages after the failover", func() bool {
		return len(bob.log(chat)) >= len(kept)+len(lost)+len(after)
	})
	bySeq := map[int64]string{}
	for _, m := range bob.log(chat) {
		if id, ok := bySeq[m.Seq]; ok && id != m.ID {
			t.Errorf("seq %d reused: bob holds %s and %s", m.Seq, id, m.ID)
		}
		bySeq[m.Seq] = m.ID
	}

	// History on the new primary has the gap: the lost seqs are missing,
	// not filled by other messages.
	page, err := alice.c.History(context.Background(), chat, 0, 100)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	var seqs []int64
	for _, m := range page.Messages {
		seqs = append(seqs, m.Seq)
		if m.Seq > kept[len(kept)-1].Seq && m.Seq <= lastLost {
			t.Errorf("history holds seq %d (%s) inside the lost range", m.Seq, m.ID)
		}
	}
	t.Logf("lost seqs %d..%d; history now %v", lost[0].Seq, lastLost, seqs)

	// A device that missed the lost messages skips them when history
	// answers past them, and gets everything after.
	tab := newClient(t, rn.URL(), "bob", "tab", nil)
	tab.TrackFrom(chat, kept[len(kept)-1].Seq)
	tp := runPeer(t, tab)
	testwait.For(t, 10*time.Second, "the new device caught up from history", func() bool {
		return len(tp.log(chat)) == len(after)
	})
	if got := tab.Stats().SkippedSeqs; got != int64(len(lost)) {
		t.Errorf("new device skipped %d seqs, want %d", got, len(lost))
	}
}

// The same failover run by pg_auto_failover, the manager an operator
// would use (Debian's postgresql-15-auto-failover): nobody promotes by
// hand; the monitor notices the primary's loss and promotes the
// synchronous secondary, and chatd follows on its multi-host URL.
func TestPostgresFailoverPgAutoFailover(t *testing.T) {
	af := testpgha.StartAutoFailover(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	rn := mustRunNode(t, nodeConfig(af.URL("chatd"), ns.ClientURL(), "n1", node.Config{}))
	sp := mustPeer(t, rn.URL(), "alice", "", nil)
	rp := mustPeer(t, rn.URL(), "bob", "", nil)
	sp.waitConnected(t, 1)
	rp.waitConnected(t, 1)
	s := &failoverSender{p: sp, chat: sp.mustDirect(t, "bob"), name: "alice", refused: map[wire.Code]int{}, other: map[string]int{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.run(ctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })
	testwait.For(t, 20*time.Second, "sends before the loss", func() bool { return s.count() >= 20 })

	af.Nodes[0].Kill(t)
	killed := time.Now()
	af.WaitState(t, af.Nodes[1].Name, "wait_primary", 40*time.Second, nil)
	promoted := time.Now()
	before := s.count()
	testwait.For(t, 30*time.Second, "sends after the promotion", func() bool { return s.count() >= before+20 })
	stop()
	wg.Wait()
	first, _ := s.firstAfter(killed.Add(time.Millisecond))
	if at, ok := s.firstAfter(promoted); ok {
		t.Logf("primary killed; monitor reported the promotion %v later; first send accepted %v after the kill (%v after the report)",
			promoted.Sub(killed).Round(time.Millisecond), first.Sub(killed).Round(time.Millisecond), at.Sub(promoted).Round(time.Millisecond))
	}

	ids := idsAfter(0, s.accepted)
	conn, err := pgx.Connect(context.Background(), af.Nodes[1].DSN("chatd"))
	if err != nil {
		t.Fatalf("connect to the new primary: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM history WHERE msg_id = ANY($1)", ids).Scan(&n); err != nil {
		t.Fatalf("count history: %v", err)
	}
	if n != len(ids) {
		t.Errorf("%d of %d acked messages in history on the new primary (lost %d)", n, len(ids), len(ids)-n)
	}
	rp.reconcile(t, s.chat, 1, ids, 30*time.Second)
	t.Logf("%d accepted, 0 lost; refused %v, other errors %v", len(ids), s.refused, s.other)
	if s.refused[wire.CodeOverloaded] > 0 {
		t.Errorf("%d sends refused overloaded during the failover; want unavailable", s.refused[wire.CodeOverloaded])
	}
	testwait.For(t, 20*time.Second, "outbox drained on the new primary", func() bool { return rn.outboxDepth(t) == 0 })
}

// A node that was down while PostgreSQL lost commits has no marks of its
// own; at start it raises every chat's next seq past what the delivery
// stream holds, before it takes a send. Here the stream holds an envelope
// (seq 50, outbox id 1000) the database never handed out, as the lost
// primary would have left.
func TestNodeStartRaisesSeqsPastTheStream(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	n1 := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "n1", node.Config{}))
	alice := mustPeer(t, n1.URL(), "alice", "", nil)
	alice.waitConnected(t, 1)
	chat := alice.mustDirect(t, "bob")
	alice.sendN(t, chat, "before", 3, 0)
	if err := alice.stop(t); err != nil {
		t.Fatalf("client: %v", err)
	}
	if err := n1.stop(t); err != nil {
		t.Fatalf("stop node: %v", err)
	}

	env, err := json.Marshal(chatd.Envelope{OutboxID: 1000, Recipients: []string{"alice", "bob"},
		Message: chatd.Message{ID: "01LOSTLOSTLOSTLOSTLOSTLOST", Chat: chat, From: "alice", Seq: 50, Body: "lost"}})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), stream.SubjectPrefix+chat, env); err != nil {
		t.Fatalf("publish: %v", err)
	}

	n2 := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "n1", node.Config{}))
	alice2 := mustPeer(t, n2.URL(), "alice", "", nil)
	alice2.waitConnected(t, 1)
	acc := alice2.sendN(t, chat, "after", 1, 0)
	if len(acc) != 1 || acc[0].Seq != 51 {
		t.Fatalf("first send after the start: got %+v, want seq 51", acc)
	}
	var next int64
	if err := n2.Store.Pool().QueryRow(context.Background(),
		"SELECT pg_sequence_last_value(pg_get_serial_sequence('outbox', 'id')::regclass)").Scan(&next); err != nil || next <= 1000 {
		t.Errorf("outbox id sequence at %d (%v), want above 1000", next, err)
	}
}
