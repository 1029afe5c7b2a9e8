package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
)

func TestFallbackURLs(t *testing.T) {
	tg := &target{urls: []string{"a", "b", "c"}}
	tests := []struct {
		name string
		i    int
		want []string
	}{
		{"first node's client", 0, []string{"b", "c"}},
		{"second node's client", 1, []string{"c", "a"}},
		{"wraps around", 5, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tg.fallbackURLs(tt.i); !slices.Equal(got, tt.want) {
				t.Fatalf("fallbackURLs(%d) = %v, want %v", tt.i, got, tt.want)
			}
		})
	}
	if got := (&target{urls: []string{"a"}}).fallbackURLs(3); len(got) != 0 {
		t.Fatalf("one node: fallbackURLs = %v, want none", got)
	}
}

// TestNodeStoppedClientsMove runs a load over two nodes of one cluster and
// stops the second node mid-run: its clients' sessions end (going away) and
// they must carry on on the first node, as behind a load balancer, with
// nothing lost. A client that kept dialling the stopped node would never
// receive again, and the reconciliation would count its messages lost.
func TestNodeStoppedClientsMove(t *testing.T) {
	const secret = "chatload-failover-secret"
	dir, err := os.MkdirTemp("", "chatload-failover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The managed PostgreSQL runs as the postgres user when tests run as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	base := node.Config{NATSURL: ns.ClientURL(), JWTSecret: secret, API: api.Config{AdminUsers: []string{"chatload-admin"}}, Logger: quiet}
	cfg1 := base
	cfg1.NodeID, cfg1.DataDir = "n1", filepath.Join(dir, "n1")
	n1 := nodetest.Run(t, cfg1)
	cfg2 := base
	cfg2.NodeID, cfg2.DatabaseURL = "n2", n1.Postgres().DSN("chatd")
	n2 := nodetest.Run(t, cfg2)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := make(chan error, 1)
	go func() {
		// Setup (connects, chats) takes about a second; the load runs 6 s.
		time.Sleep(3 * time.Second)
		stopped <- n2.Stop(t)
	}()
	var out strings.Builder
	rep, err := runLoad(ctx, Config{
		Scenario: scenarioPairs, Clients: 20, Rate: 100, Duration: 6 * time.Second,
		URL: n1.URL() + "," + n2.URL(), JWTSecret: secret,
		Progress: time.Second, Drain: 20 * time.Second, Out: &out,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("runLoad: %v", err)
	}
	rep.writeText(&out)
	t.Log("\n" + out.String())
	if err := <-stopped; err != nil {
		t.Errorf("node n2 stop: %v", err)
	}
	if rep.Accepted == 0 {
		t.Fatalf("got 0 accepted, want > 0")
	}
	if rep.Reconnects < 10 {
		t.Errorf("got %d reconnects, want at least the 10 clients of the stopped node", rep.Reconnects)
	}
	if rep.Lost != 0 || rep.MissingPairs != 0 || rep.DuplicatesToApp != 0 || !rep.Pass {
		t.Errorf("got lost %d (missing %d), %d duplicates to the app, pass %v; want 0, 0, true: %+v",
			rep.Lost, rep.MissingPairs, rep.DuplicatesToApp, rep.Pass, rep.LostExamples)
	}
}
