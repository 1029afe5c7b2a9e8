package reclaim

import (
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	floor  prometheus.Gauge
	depth  prometheus.Gauge
	purged prometheus.Counter
	resets prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	// promauto.With(nil) builds without registering (tests, a component
	// used alone); a duplicate name on the app registry is a wiring bug and panics.
	f := promauto.With(reg)
	m := &metrics{
		floor: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_reclaim_floor", Help: "The Tetris floor: the lowest stream sequence still needed.",
		}),
		depth: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_stream_messages", Help: "Messages in the delivery stream.",
		}),
		purged: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_reclaim_purged_total", Help: "Stream messages purged below the floor.",
		}),
		resets: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_reclaim_stream_resets_total", Help: "Times the stream's sequences went backwards.",
		}),
	}
	return m
}
