package stream

import (
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/prometheus/client_golang/prometheus"
)

type relayMetrics struct {
	relayed  prometheus.Counter
	settled  prometheus.Counter
	errors   prometheus.Counter
	setAside prometheus.Counter
	// rows counts the rows rounds took, by where their message came from.
	rowsMemory, rowsTable prometheus.Counter
	holdDropped           prometheus.Counter
	leader                prometheus.Gauge
	lag                   prometheus.Histogram
}

func newRelayMetrics(reg prometheus.Registerer, h *held) *relayMetrics {
	// promauto.With(nil) builds without registering (tests, a component
	// used alone); a duplicate name on the app registry is a wiring bug and panics.
	f := promauto.With(reg)
	m := &relayMetrics{
		relayed: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_published_total", Help: "Outbox rows published to the delivery stream and deleted from PostgreSQL.",
		}),
		settled: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_settled_total", Help: "Outbox rows of settled messages (every recipient connection, on every node when settling across nodes, had acked the message or left): deleted without a publish, or, with webhooks, published under the subjects live delivery does not read.",
		}),
		errors: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_errors_total", Help: "Relay rounds that failed (NATS or PostgreSQL unavailable); rows are retried.",
		}),
		setAside: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_set_aside_total", Help: "Outbox rows the relay could never publish (e.g. over NATS's max payload), moved to the outbox_set_aside table; recipients recover them from history.",
		}),
		leader: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_relay_active", Help: "1 while this node holds the relay lock.",
		}),
		lag: f.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_relay_lag_seconds", Help: "From commit to the stream's publish ack.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	rows := f.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_relay_rows_total", Help: "Outbox rows relay rounds took, by where their message came from: memory (handed over by this node's commit) or table (read back from PostgreSQL). A retried row counts again.",
	}, []string{"source"})
	m.rowsMemory, m.rowsTable = rows.WithLabelValues("memory"), rows.WithLabelValues("table")
	m.holdDropped = f.NewCounter(prometheus.CounterOpts{
		Name: "chatd_relay_hold_dropped_total", Help: "Committed entries the relay did not keep in memory because it held its bound already; their rows are read back from PostgreSQL.",
	})
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_relay_held", Help: "Committed entries the relay holds in memory, waiting to be published.",
	}, func() float64 { return float64(h.len()) })
	return m
}
