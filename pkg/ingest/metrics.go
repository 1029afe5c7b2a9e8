package ingest

import (
	"errors"
	"fmt"

	"github.com/chatd/chatd"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	accepted      prometheus.Counter
	duplicates    prometheus.Counter
	failedBatches prometheus.Counter
	rejected      *prometheus.CounterVec
	queued        prometheus.Gauge
	batchSize     prometheus.Histogram
	commitSeconds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ingest_accepted_total", Help: "Messages durably accepted (history and outbox committed).",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ingest_duplicates_total", Help: "Resends of an already stored (sender, cid), answered with the original.",
		}),
		failedBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ingest_failed_batches_total", Help: "Batches whose transaction failed; their senders were told to resend.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ingest_rejected_total", Help: "Sends not accepted, by reason.",
		}, []string{"reason"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_ingest_queue_depth", Help: "Sends waiting in the inbound queue.",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_ingest_batch_size", Help: "Sends per group-commit batch.",
			Buckets: []float64{1, 2, 4, 8, 16, 36, 64, 128, 256},
		}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_ingest_commit_seconds", Help: "Latency of one group-commit transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.accepted, m.duplicates, m.failedBatches, m.rejected, m.queued, m.batchSize, m.commitSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register ingest metrics: %w", err)
		}
	}
	return m, nil
}

func rejectLabel(err error) string {
	switch {
	case errors.Is(err, chatd.ErrNotFound):
		return "not_found"
	case errors.Is(err, chatd.ErrForbidden):
		return "forbidden"
	}
	return "other"
}
