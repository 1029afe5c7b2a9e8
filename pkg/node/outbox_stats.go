package node

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// outboxStatsInterval is how often the outbox is counted for /metrics.
// The alarm it feeds (oldest age) moves in minutes, and the count is
// slowest exactly when the outbox is large, so a few seconds is plenty.
const outboxStatsInterval = 5 * time.Second

// outboxStats exposes the PostgreSQL outbox's depth and oldest age, the
// design's alarm: they grow only while NATS is unreachable or the stream
// is full. A loop owned by the node (run) counts the outbox every
// outboxStatsInterval; scrapes read the last count and never query, since
// /metrics is unauthenticated and a scrape must not be a way to load the
// database. Safe for concurrent use.
type outboxStats struct {
	query    func(context.Context) (store.OutboxStats, error)
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu    sync.Mutex
	last  store.OutboxStats
	known bool // false until the first count, and after a failed one
}

func newOutboxStats(query func(context.Context) (store.OutboxStats, error), reg prometheus.Registerer, log *slog.Logger) *outboxStats {
	o := &outboxStats{query: query, interval: outboxStatsInterval, now: time.Now, log: log}
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_outbox_depth",
		Help: "Rows in the PostgreSQL outbox not yet relayed, counted every few seconds (-1: not counted yet or database unreachable).",
	}, func() float64 { d, _ := o.values(); return d })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_outbox_oldest_age_seconds",
		Help: "Age of the oldest un-relayed outbox row at the last count, aged to now; 0 when empty (-1: unknown).",
	}, func() float64 { _, a := o.values(); return a })
	return o
}

// values is the last count. The age is computed now, so a stuck row's age
// keeps rising between counts; a row relayed since the last count may be
// reported for up to one interval more.
func (o *outboxStats) values() (depth, age float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.known {
		return -1, -1
	}
	if !o.last.Oldest.IsZero() {
		age = o.now().Sub(o.last.Oldest).Seconds()
	}
	return float64(o.last.Depth), age
}

// run counts the outbox at once and then every interval until ctx ends.
func (o *outboxStats) run(ctx context.Context) error {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		o.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (o *outboxStats) refresh(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, o.interval)
	defer cancel()
	st, err := o.query(qctx)
	if ctx.Err() != nil {
		return // shutting down: keep the last count
	}
	if err != nil {
		// The gauges say -1; a log line every interval would only repeat it.
		o.log.Debug("count outbox", "err", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last, o.known = st, err == nil
}
