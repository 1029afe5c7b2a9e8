package reclaim

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	floor  prometheus.Gauge
	depth  prometheus.Gauge
	purged prometheus.Counter
	resets prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		floor: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_reclaim_floor", Help: "The Tetris floor: the lowest stream sequence still needed.",
		}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_stream_messages", Help: "Messages in the delivery stream.",
		}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_reclaim_purged_total", Help: "Stream messages purged below the floor.",
		}),
		resets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_reclaim_stream_resets_total", Help: "Times the stream's sequences went backwards.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.floor, m.depth, m.purged, m.resets} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register reclaim metrics: %w", err)
		}
	}
	return m, nil
}
