package stream

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type relayMetrics struct {
	relayed prometheus.Counter
	errors  prometheus.Counter
	leader  prometheus.Gauge
	lag     prometheus.Histogram
}

func newRelayMetrics(reg prometheus.Registerer) (*relayMetrics, error) {
	m := &relayMetrics{
		relayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_published_total", Help: "Outbox rows published to the delivery stream and deleted from PostgreSQL.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_relay_errors_total", Help: "Relay rounds that failed (NATS or PostgreSQL unavailable); rows are retried.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_relay_active", Help: "1 while this node holds the relay lock.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_relay_lag_seconds", Help: "From commit to the stream's publish ack.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.relayed, m.errors, m.leader, m.lag} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}
