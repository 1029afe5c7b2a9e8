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
	batchSize     prometheus.Histogram
	commitSeconds prometheus.Histogram
}

// newMetrics builds the metrics; held reports the sends Ingest holds.
func newMetrics(reg prometheus.Registerer, held func() float64) *metrics {
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
		batchSize: f.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_ingest_batch_size", Help: "Sends per group-commit batch.",
			Buckets: []float64{1, 2, 4, 8, 16, 36, 64, 128, 256},
		}),
		commitSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_ingest_commit_seconds", Help: "Latency of one group-commit transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	// Read from the bound's own counter at scrape time: nothing per send.
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chatd_ingest_queue_depth",
		Help: "Sends held between submit and the end of their commit (queued, waiting for their chat, in a batch); at --queue-size sends are refused overloaded.",
	}, held)
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
