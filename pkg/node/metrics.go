package node

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// registerDatabaseGauges exposes the PostgreSQL outbox's depth and oldest age
// from counts that Run's outbox loop refreshes (see outboxStats), so a
// scrape never queries the database.
func (n *Node) registerDatabaseGauges() {
	n.outboxStats = newOutboxStats(n.Store.OutboxStats, n.reg, n.log)
	promauto.With(n.reg).NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_postgres_timeline",
		Help: "WAL timeline of the PostgreSQL primary chatd last connected to (0: not yet); it rises by one with each failover.",
	}, func() float64 { return float64(n.Store.Timeline()) })
}
