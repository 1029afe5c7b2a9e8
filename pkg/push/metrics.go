package push

import (
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	connections prometheus.Gauge
	// frames by path, each child looked up once: one is counted for every
	// frame handed out, and WithLabelValues hashes and locks each time.
	framesFast, framesStream, framesRedelivery, framesReleased prometheus.Counter
	// held counts messages held for connections at their budget; paced and
	// pacedFast count the stream deliveries held and the fast-path frames
	// left to the stream for that reason (pace.go).
	held             prometheus.Gauge
	paced, pacedFast prometheus.Counter
	redeliveries     prometheus.Counter
	firstFrames      prometheus.Counter
	acks             prometheus.Counter
	ackSeconds       prometheus.Histogram
	withdrawn        *prometheus.CounterVec
	consumerLost     prometheus.Counter
	alone            prometheus.Gauge
	// shared, reports and fenced count settling across nodes (peers.go,
	// fence.go).
	shared, reports, fenced prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	// promauto.With(nil) builds without registering (tests, a component
	// used alone); a duplicate name on the app registry is a wiring bug and panics.
	f := promauto.With(reg)
	frames := f.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_push_delivered_frames_total", Help: "msg frames handed to connections, by path (fast, stream, redelivery, released: held for a connection at its max-pending budget, sent once it acked).",
	}, []string{"path"})
	paced := f.NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_push_paced_total",
		Help: "Deliveries to a connection at its max-pending budget, by path: fast (left to the stream delivery), stream (held until the connection acks).",
	}, []string{"path"})
	m := &metrics{
		framesFast:       frames.WithLabelValues("fast"),
		framesStream:     frames.WithLabelValues("stream"),
		framesRedelivery: frames.WithLabelValues("redelivery"),
		framesReleased:   frames.WithLabelValues("released"),
		paced:            paced.WithLabelValues("stream"),
		pacedFast:        paced.WithLabelValues("fast"),
		held: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_push_held", Help: "Messages held for connections at their max-pending budget, to send as they ack.",
		}),
		connections: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_push_connections", Help: "Sessions registered for live delivery on this node.",
		}),
		firstFrames: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_first_deliveries_total",
			Help: "(message, connection) pairs handed a frame for the first time; delivered frames over this is deliveries per accepted per recipient (1.0 = no re-sends).",
		}),
		redeliveries: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_redeliveries_total", Help: "msg frames re-sent after a lease expired un-acked.",
		}),
		acks: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_acks_total", Help: "Message ids acked by clients.",
		}),
		ackSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name: "chatd_push_ack_seconds", Help: "From the stream delivery to the client's ack.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		withdrawn: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_push_withdrawn_total", Help: "Connections withdrawn from live delivery, by reaper or reason.",
		}, []string{"reason"}),
		consumerLost: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_consumer_lost_total",
			Help: "Times this node's consumer was found gone (or its consume ended) and was recreated, its sessions resynced.",
		}),
		alone: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_push_settle_alone",
			Help: "1 while settling is on and the delivery stream has no consumer but this node's (or, settling across nodes, the nodes'), so messages every connection acked may stay out of it; 0 otherwise.",
		}),
		shared: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_shared_total",
			Help: "Messages another node committed and shared with this one for its fast path (settling across nodes).",
		}),
		reports: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_settle_reports_total",
			Help: "Shared messages this node reported settled to the node that committed them (settling across nodes).",
		}),
		fenced: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_push_peers_fenced_total",
			Help: "Consumers of other nodes this node deleted while its relay led, the presence heartbeat of each having lapsed, so the nodes settle without it (settling across nodes).",
		}),
	}
	return m
}
