package push

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	connections  prometheus.Gauge
	frames       *prometheus.CounterVec
	redeliveries prometheus.Counter
	acks         prometheus.Counter
	ackSeconds   prometheus.Histogram
	withdrawn    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_push_connections", Help: "Sessions registered for live delivery on this node.",
		}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_push_delivered_frames_total", Help: "msg frames handed to connections, by path (fast, stream, redelivery).",
		}, []string{"path"}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_redeliveries_total", Help: "msg frames re-sent after a lease expired un-acked.",
		}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_acks_total", Help: "Message ids acked by clients.",
		}),
		ackSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_push_ack_seconds", Help: "From the stream delivery to the client's ack.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		withdrawn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_push_withdrawn_total", Help: "Connections withdrawn from live delivery, by reaper or reason.",
		}, []string{"reason"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.connections, m.frames, m.redeliveries, m.acks, m.ackSeconds, m.withdrawn} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register push metrics: %w", err)
		}
	}
	return m, nil
}
