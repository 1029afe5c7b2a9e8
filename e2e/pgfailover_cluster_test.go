package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpgha"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/jackc/pgx/v5"
)

// Three nodes on a three-server NATS cluster (stream replicas 3), all on
// the multi-host URL of a primary and a synchronous standby, with clients
// spread over the nodes and every chat across two of them, so every
// message crosses the relay, the stream and another node's consumer. The
// primary is SIGKILLed under load and the standby promoted. Every node
// follows the new primary without a restart: every acked message is in
// history on it and reached both ends of its chat exactly once, in seq
// order; the relay (one, on some node) drains the outbox again and reclaim
// purges the stream again; every send refused meanwhile was refused
// `unavailable`. Each node shows the failover once: its /readyz names the
// new timeline and the failover, chatd_postgres_timeline rises by one, and
// one log line says "postgres failover: timeline X→Y".
func TestPostgresFailoverCluster(t *testing.T) {
	const (
		pairs = 6
		gap   = 40 * time.Millisecond // per sender: 12 senders, about 250 msg/s in all
	)
	pair := testpgha.Start(t, testpgha.Config{Sync: true})
	nc := testnats.StartCluster(t, 3)
	base := node.Config{Stream: stream.Config{Replicas: 3}, Reclaim: reclaim.Config{Interval: 500 * time.Millisecond}}
	var nodes []*runningNode
	var logs []*testlog.Buffer
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		cfg := nodeConfig(pair.URL("chatd"), nc.URLs(), id, base)
		logf := &testlog.Buffer{}
		cfg.Logger = warnLogger(logf).With("node", id)
		nodes = append(nodes, mustRunNode(t, cfg))
		logs = append(logs, logf)
	}

	ps := make([]*clusterPair, pairs)
	var senders [pairs][2]*failoverSender
	for k := range ps {
		na, nb := nodes[k%3], nodes[(k+1)%3]
		ua, ub := fmt.Sprintf("pa%d", k), fmt.Sprintf("pb%d", k)
		a := mustPeer(t, na.URL(), ua, "", nil)
		chat := a.mustDirect(t, ub)
		a.c.Track(chat)
		b := runPeer(t, newClient(t, nb.URL(), ub, "", func(cfg *client.Config) { cfg.Chats = []string{chat} }))
		b.waitConnected(t, 1)
		ps[k] = &clusterPair{chat: chat, ends: [2]*peer{a, b}}
		for e, p := range ps[k].ends {
			senders[k][e] = &failoverSender{p: p, chat: chat, name: fmt.Sprintf("p%d-%d", k, e), gap: gap,
				refused: map[wire.Code]int{}, other: map[string]int{}}
		}
	}
	all := func(f func(s *failoverSender)) {
		for k := range senders {
			for _, s := range senders[k] {
				f(s)
			}
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	all(func(s *failoverSender) {
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	all(func(s *failoverSender) {
		testwait.For(t, 20*time.Second, "sends before the loss", func() bool { return s.count() >= 10 })
	})

	timeline := nodes[0].metric(t, "chatd_postgres_timeline")
	for _, rn := range nodes {
		if got := rn.metric(t, "chatd_postgres_timeline"); got != timeline || got < 1 {
			t.Fatalf("node %s: chatd_postgres_timeline %v before the failover, want %v (the primary's, 1 or more)", rn.NodeID(), got, timeline)
		}
		if pg := readyPostgres(t, rn); pg.Timeline != int64(timeline) || pg.LastFailover != nil {
			t.Fatalf("node %s: /readyz says %+v before the failover, want timeline %v and no failover", rn.NodeID(), pg, timeline)
		}
	}

	pair.Primary.Kill(t)
	killed := time.Now()
	// Long enough for every sender to meet the missing primary.
	time.Sleep(time.Second)
	pair.Standby.Promote(t)
	promoted := time.Now()
	purged := sumMetric(t, nodes, "chatd_reclaim_purged_total")
	counts := map[*failoverSender]int{}
	all(func(s *failoverSender) { counts[s] = s.count() })
	all(func(s *failoverSender) {
		testwait.For(t, 30*time.Second, "sends after the promotion", func() bool { return s.count() >= counts[s]+10 })
	})
	stop()
	wg.Wait()

	var first time.Time
	all(func(s *failoverSender) {
		if at, ok := s.firstAfter(promoted); ok && (first.IsZero() || at.Before(first)) {
			first = at
		}
	})
	t.Logf("primary killed; promoted %v later; first send accepted %v after the promotion",
		promoted.Sub(killed).Round(time.Millisecond), first.Sub(promoted).Round(time.Millisecond))

	// Every refusal told the client the truth: resend, the database is
	// failing over (not overloaded, not a rejection for good).
	refused, others := 0, 0
	all(func(s *failoverSender) {
		for code, n := range s.refused {
			refused += n
			if code != wire.CodeUnavailable {
				t.Errorf("%s: %d sends refused %s while the database failed over; want unavailable", s.name, n, code)
			}
		}
		for err, n := range s.other {
			others += n
			t.Logf("%s: %d sends failed without an answer: %s", s.name, n, err)
		}
	})

	// Every acked message is on the new primary and reached both ends of
	// its chat exactly once, contiguous from seq 1.
	conn, err := pgx.Connect(context.Background(), pair.Standby.DSN("chatd"))
	if err != nil {
		t.Fatalf("connect to the new primary: %v", err)
	}
	defer conn.Close(context.Background())
	total := 0
	for k, p := range ps {
		want := idsAfter(0, senders[k][0].accepted, senders[k][1].accepted)
		total += len(want)
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM history WHERE msg_id = ANY($1)", want).Scan(&n); err != nil {
			t.Fatalf("count history: %v", err)
		}
		if n != len(want) {
			t.Errorf("chat %s: %d of %d acked messages in history on the new primary (lost %d)", p.chat, n, len(want), len(want)-n)
		}
		for _, end := range p.ends {
			end.reconcile(t, p.chat, 1, want, 30*time.Second)
		}
	}
	t.Logf("%d messages acked in %d chats over 3 nodes, 0 lost, each at both ends once; %d sends refused unavailable, %d unanswered (resent with the same cid)",
		total, pairs, refused, others)

	// The relay and reclaim resumed on the cluster.
	testwait.For(t, 20*time.Second, "outbox drained on the new primary", func() bool { return nodes[0].outboxDepth(t) == 0 })
	testwait.For(t, 20*time.Second, "one relay leads", func() bool { return sumMetric(t, nodes, "chatd_relay_active") == 1 })
	testwait.For(t, 20*time.Second, "reclaim purges the stream again", func() bool {
		return sumMetric(t, nodes, "chatd_reclaim_purged_total") > purged
	})

	// Each node shows the failover once.
	line := fmt.Sprintf("postgres failover: timeline %d→%d", int64(timeline), int64(timeline)+1)
	for i, rn := range nodes {
		// A node learns the new timeline when it next connects to PostgreSQL:
		// one whose commits were forwarded may not have yet, so /readyz (which
		// connects) goes first, and the gauge must agree with it after.
		var pg api.PostgresState
		testwait.For(t, 10*time.Second, "/readyz names the failover", func() bool {
			pg = readyPostgres(t, rn)
			return pg.Timeline == int64(timeline)+1
		})
		if got := rn.metric(t, "chatd_postgres_timeline"); got != timeline+1 {
			t.Errorf("node %s: chatd_postgres_timeline %v after one failover, want %v", rn.NodeID(), got, timeline+1)
		}
		if f := pg.LastFailover; f == nil || f.FromTimeline != int64(timeline) || f.ToTimeline != int64(timeline)+1 || f.At.Before(promoted.Add(-time.Second)) {
			t.Errorf("node %s: /readyz last_failover %+v, want timeline %v → %v at or after the promotion", rn.NodeID(), f, timeline, timeline+1)
		}
		text := logs[i].String()
		if n := strings.Count(text, "postgres failover:"); n != 1 || !strings.Contains(text, line) {
			t.Errorf("node %s: %d lines say \"postgres failover:\", want one saying %q", rn.NodeID(), n, line)
		}
		t.Logf("node %s: %d WARN lines in all", rn.NodeID(), strings.Count(text, "level=WARN"))
	}
}

// warnLogger logs WARN and above to buf, and everything to stderr as well
// when logEnv is set.
func warnLogger(buf *testlog.Buffer) *slog.Logger {
	var w io.Writer = buf
	level := slog.LevelWarn
	if os.Getenv(logEnv) != "" {
		w, level = io.MultiWriter(buf, os.Stderr), slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// readyPostgres is what rn's /readyz says about PostgreSQL; zero while it
// answers 503.
func readyPostgres(t *testing.T, rn *runningNode) api.PostgresState {
	t.Helper()
	resp, err := http.Get(rn.URL() + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Postgres *api.PostgresState `json:"postgres"`
	}
	if resp.StatusCode != http.StatusOK {
		return api.PostgresState{}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Postgres == nil {
		t.Fatalf("readyz: %v; want a postgres field", err)
	}
	return *body.Postgres
}

// sumMetric adds up the named metric over nodes.
func sumMetric(t *testing.T, nodes []*runningNode, name string) float64 {
	t.Helper()
	var sum float64
	for _, rn := range nodes {
		sum += rn.metric(t, name)
	}
	return sum
}
