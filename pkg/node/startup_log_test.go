package node_test

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/push"
)

// readyPoller asks /readyz back to back, as an impatient load balancer
// would, and remembers each answer's status in order.
type readyPoller struct {
	mu       sync.Mutex
	statuses []int
	ready    chan struct{} // closed at the first 200
	once     sync.Once
}

// pollReady polls url+"/readyz" until ctx ends; wait on the returned
// WaitGroup after cancelling ctx.
func pollReady(ctx context.Context, url string) (*readyPoller, *sync.WaitGroup) {
	p := &readyPoller{ready: make(chan struct{})}
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
			resp, err := client.Do(req)
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			resp.Body.Close()
			p.mu.Lock()
			p.statuses = append(p.statuses, resp.StatusCode)
			p.mu.Unlock()
			if resp.StatusCode == http.StatusOK {
				p.once.Do(func() { close(p.ready) })
			}
		}
	}()
	return p, &wg
}

// notReadyAfterReady counts 503s answered after the first 200.
func (p *readyPoller) notReadyAfterReady() (after, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := false
	for _, s := range p.statuses {
		if s == http.StatusOK {
			seen = true
		} else if seen {
			after++
		}
	}
	return after, len(p.statuses)
}

// startQuietly starts and runs a node on dataDir while a poller hammers
// /readyz, watches it for a while after it first answers ready, stops it,
// and checks the log of that whole start: no WARN or ERROR line, no "not
// ready" after "chatd ready", and /readyz never 503 after its first 200.
func startQuietly(t *testing.T, dataDir, run string) {
	t.Helper()
	var logs testlog.Buffer
	const check = 50 * time.Millisecond
	cfg := node.Config{
		DataDir: dataDir, Listen: "127.0.0.1:0", Push: push.Config{CheckInterval: check},
		// Debug, so /readyz's quieter "not ready" shows too.
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := nodetest.Start(t, cfg)
	if err != nil {
		t.Fatalf("%s: start: %v", run, err)
	}
	pctx, stopPoll := context.WithCancel(ctx)
	poller, polling := pollReady(pctx, n.URL())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()

	select {
	case <-poller.ready:
	case err := <-done:
		t.Fatalf("%s: node stopped before it was ready: %v", run, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: /readyz not 200 within 30s", run)
	}
	// The consumer check runs every ConsumerCheck: twenty of them is long
	// enough for anything a check decides just after startup to show.
	time.Sleep(20 * check)
	stopPoll()
	polling.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("%s: run: %v", run, err)
	}

	out := logs.String()
	startup, _, _ := strings.Cut(out, "msg=\"shutting down\"")
	var bad []string
	for _, line := range strings.Split(startup, "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: startup logged %d WARN/ERROR lines, want none:\n%s", run, len(bad), strings.Join(bad, "\n"))
	}
	_, afterReady, ok := strings.Cut(startup, "msg=\"chatd ready\"")
	if !ok {
		t.Fatalf("%s: no \"chatd ready\" line in the log:\n%s", run, out)
	}
	if strings.Contains(afterReady, "not ready") {
		t.Errorf("%s: the log says \"not ready\" after \"chatd ready\":\n%s", run, startup)
	}
	if after, total := poller.notReadyAfterReady(); after > 0 {
		t.Errorf("%s: /readyz answered 503 %d times after its first 200 (of %d polls)", run, after, total)
	}
}

// A node's start, and its restart on the same data dir, log no warning or
// error, say "chatd ready" only once /readyz says so, and stay ready: an
// operator reads every WARN as something to act on.
func TestStartupIsQuietAndTrue(t *testing.T) {
	dataDir := filepath.Join(mustTempDir(t, 0o755), "data")
	startQuietly(t, dataDir, "first start")
	startQuietly(t, dataDir, "restart")
}
