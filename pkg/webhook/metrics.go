package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are labelled by endpoint: its consumer name, never its URL (a URL
// may carry credentials).
type metrics struct {
	delivered    *prometheus.CounterVec
	failed       *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	lag          *prometheus.GaugeVec
	delivering   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	l := []string{"endpoint"}
	return &metrics{
		delivered: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_webhook_delivered_total", Help: "Events a webhook endpoint answered 2xx (replays included).",
		}, l),
		failed: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_webhook_failed_attempts_total", Help: "Webhook posts that failed (error, timeout or non-2xx) and will be retried or set aside.",
		}, l),
		deadLettered: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_webhook_dead_lettered_total", Help: "Webhook events set aside in PostgreSQL after their last attempt.",
		}, l),
		lag: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "chatd_webhook_lag_messages", Help: "Stream events not yet acked by a webhook endpoint's consumer (reported by the node that delivers to it).",
		}, l),
		delivering: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "chatd_webhook_delivering", Help: "1 on the node that delivers to the endpoint, 0 on the nodes that stand by.",
		}, l),
	}
}
