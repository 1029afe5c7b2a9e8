package signal

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// busMetrics count what the bus moves and loses, by signal kind.
type busMetrics struct {
	published *prometheus.CounterVec
	received  *prometheus.CounterVec
	lost      *prometheus.CounterVec // publish failed or undecodable
}

func newBusMetrics(reg prometheus.Registerer) *busMetrics {
	// promauto.With(nil) builds without registering (tests, a bus used alone).
	f := promauto.With(reg)
	return &busMetrics{
		published: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_signals_published_total", Help: "Signals this node published, by kind.",
		}, []string{"kind"}),
		received: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_signals_received_total", Help: "Signals this node received from any node (itself too) and delivered, by kind.",
		}, []string{"kind"}),
		lost: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_signals_lost_total", Help: "Signals lost on this node: publish failed (publish) or undecodable (decode).",
		}, []string{"reason"}),
	}
}

// presenceMetrics count presence transitions and their losses.
type presenceMetrics struct {
	transitions *prometheus.CounterVec
	dropped     prometheus.Counter
	writeErrors prometheus.Counter
}

func newPresenceMetrics(reg prometheus.Registerer) *presenceMetrics {
	f := promauto.With(reg)
	return &presenceMetrics{
		transitions: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_presence_transitions_total", Help: "Cluster-wide presence transitions this node saw, by state (online, offline).",
		}, []string{"state"}),
		dropped: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_presence_dropped_total", Help: "Presence transitions not delivered: the queue was full or the audience query failed.",
		}),
		writeErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_presence_write_errors_total", Help: "Failed puts and deletes of this node's presence entries.",
		}),
	}
}
