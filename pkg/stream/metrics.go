package stream

import (
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/prometheus/client_golang/prometheus"
)

type relayMetrics struct {
	relayed  prometheus.Counter
	errors   prometheus.Counter
	setAside prometheus.Counter
	leader   prometheus.Gauge
	lag      prometheus.Histogram
}

func newRelayMetrics(reg prometheus.Registerer) *relayMetrics {
	// promauto.With(nil) builds without registering (tests, a component
	// used alone); a duplicate name on the app registry is a wiring bug and panics.
	f := promauto.With(reg)
	m := &relayMetrics{
		relayed: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_published_total", Help: "Outbox rows published to the delivery stream and deleted from PostgreSQL.",
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
	return m
}
