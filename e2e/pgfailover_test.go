package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpgha"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/jackc/pgx/v5"
)

// failoverSender sends to one chat until stopped, resending a refused send
// with the same cid (the contract's rule), and records what it was told.
type failoverSender struct {
	p    *peer
	chat string
	name string

	mu       sync.Mutex
	accepted []client.Accepted
	at       []time.Time       // when each accepted answer arrived
	refused  map[wire.Code]int // rejected answers by code
	other    map[string]int    // errors that are not a rejected frame
}

func (s *failoverSender) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		cid := fmt.Sprintf("%s-%d", s.name, i)
		for ctx.Err() == nil {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
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
			} else if ctx.Err() == nil {
				s.other[err.Error()]++
			}
			s.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
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
		eventually(t, 20*time.Second, "sends before the loss", func() bool { return s.count() >= 20 })
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
		eventually(t, 30*time.Second, "sends after the promotion", func() bool { return s.count() >= before[i]+20 })
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
	eventually(t, 20*time.Second, "outbox drained on the new primary", func() bool { return rn.outboxDepth(t) == 0 })
}
