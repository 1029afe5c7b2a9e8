package ingest

import (
	"errors"
	"github.com/prometheus/client_golang/prometheus/promauto"

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

func newMetrics(reg prometheus.Registerer) *metrics {
	// promauto.With(nil) builds without registering (tests, a component
	// used alone); a duplicate name on the app registry is a wiring bug and panics.
	f := promauto.With(reg)
	m := &metrics{
		accepted: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ingest_accepted_total", Help: "Messages durably accepted (history and outbox committed).",
		}),
		duplicates: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ingest_duplicates_total", Help: "Resends of an already stored (sender, cid), answered with the original.",
		}),
		failedBatches: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ingest_failed_batches_total", Help: "Batches whose transaction failed; their senders were told to resend.",
		}),
		rejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ingest_rejected_total", Help: "Sends not accepted, by reason.",
		}, []string{"reason"}),
		queued: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_ingest_queue_depth", Help: "Sends waiting in the inbound queue.",
		}),
		batchSize: f.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_ingest_batch_size", Help: "Sends per group-commit batch.",
			Buckets: []float64{1, 2, 4, 8, 16, 36, 64, 128, 256},
		}),
		commitSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_ingest_commit_seconds", Help: "Latency of one group-commit transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	return m
}

func rejectLabel(err error) string {
	switch {
	case errors.Is(err, chatd.ErrNotFound):
		return "not_found"
	case errors.Is(err, chatd.ErrForbidden):
		return "forbidden"
	case errors.Is(err, chatd.ErrTooLarge):
		return "too_large"
	case errors.Is(err, chatd.ErrCIDConflict):
		return "cid_conflict"
	}
	return "other"
}
