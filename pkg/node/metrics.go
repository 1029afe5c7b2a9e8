package node

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// registerOutboxGauges exposes the PostgreSQL outbox's depth and oldest age,
// the design's alarm: they grow only while NATS is unreachable or the stream
// is full. They are read from PostgreSQL at scrape time (one indexed query).
func (n *Node) registerOutboxGauges() {
	stats := func() (depth, age float64) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := n.Store.OutboxStats(ctx)
		if err != nil {
			return -1, -1 // unknown: the database did not answer
		}
		if !st.Oldest.IsZero() {
			age = time.Since(st.Oldest).Seconds()
		}
		return float64(st.Depth), age
	}
	f := promauto.With(n.reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_outbox_depth", Help: "Rows in the PostgreSQL outbox not yet relayed (-1: database unreachable).",
	}, func() float64 { d, _ := stats(); return d })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_outbox_oldest_age_seconds", Help: "Age of the oldest un-relayed outbox row; 0 when empty (-1: database unreachable).",
	}, func() float64 { _, a := stats(); return a })
}
