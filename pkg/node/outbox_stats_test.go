package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Scrapes read the outbox stats the background loop keeps, so a burst of
// scrapes costs the database at most a refresh or two, not a count(*) each
// (/metrics needs no token, and the count is slowest when the outbox is
// large). The store and the registry are real; only the calls are counted.
func TestOutboxStatsScrapesDoNotQuery(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	var queries atomic.Int64
	query := func(ctx context.Context) (store.OutboxStats, error) {
		queries.Add(1)
		return st.OutboxStats(ctx)
	}
	reg := prometheus.NewRegistry()
	o := newOutboxStats(query, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})

	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	scrape := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	// The first value is there soon after run starts.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(scrape(), "chatd_outbox_depth 0") {
		if time.Now().After(deadline) {
			t.Fatalf("chatd_outbox_depth not 0 within 5 s:\n%s", scrape())
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := queries.Load()
	const scrapes = 200
	for range scrapes {
		scrape()
	}
	if got := queries.Load() - before; got > 2 {
		t.Fatalf("%d scrapes made %d outbox queries, want at most 2", scrapes, got)
	}
}
