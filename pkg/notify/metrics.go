package notify

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	notified, skipped, recorded, recordFailed prometheus.Counter
	held, leading                             prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		notified: prometheus.NewCounter(prometheus.CounterOpts{Name: "chatd_notify_sent_total",
			Help: "Offline notifications published for the webhooks."}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "chatd_notify_skipped_total",
			Help: "Windows that ended with the member already having every message (acked live or read): no notification."}),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{Name: "chatd_notify_positions_recorded_total",
			Help: "Delivery positions (member and chat) written to PostgreSQL."}),
		recordFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "chatd_notify_record_failures_total",
			Help: "Writes of delivery positions that failed (retried on the next flush)."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chatd_notify_held_messages",
			Help: "Messages the notifier holds while their windows are open."}),
		leading: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chatd_notify_leading",
			Help: "1 while this node is the one that notifies."}),
	}
	if reg != nil {
		reg.MustRegister(m.notified, m.skipped, m.recorded, m.recordFailed, m.held, m.leading)
	}
	return m
}
