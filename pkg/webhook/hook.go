package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/elect"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// hook is one endpoint: its election, its consumer and its workers.
type hook struct {
	d      *Deliverer
	cfg    *Config
	ep     Endpoint
	src    source
	name   string
	signer *Signer
	kinds  map[chatd.EventKind]bool // nil: every kind
	chats  map[string]bool          // nil: every chat
	log    *slog.Logger
	// sampled keeps a failing endpoint from writing a line per attempt.
	sampled *logsample.Sampler
	m       hookMetrics
}

type hookMetrics struct {
	delivered, failed, deadLettered prometheus.Counter
	lag, delivering                 prometheus.Gauge
}

func newHook(d *Deliverer, e Endpoint, src source) *hook {
	keys, _ := ParseSecrets(e.Secret) // checked by Config.setDefaults
	name := ConsumerName(e.URL) + src.suffix
	log := d.log.With("endpoint", name, "url", redact(e.URL))
	h := &hook{d: d, cfg: &d.cfg, ep: e, src: src, name: name, signer: NewSigner(keys...), log: log, sampled: logsample.New(log, logsample.Config{}),
		m: hookMetrics{
			delivered: d.metrics.delivered.WithLabelValues(name), failed: d.metrics.failed.WithLabelValues(name),
			deadLettered: d.metrics.deadLettered.WithLabelValues(name), lag: d.metrics.lag.WithLabelValues(name),
			delivering: d.metrics.delivering.WithLabelValues(name),
		}}
	if len(e.Kinds) > 0 {
		h.kinds = map[chatd.EventKind]bool{}
		for _, k := range e.Kinds {
			h.kinds[k] = true
		}
	}
	if len(e.Chats) > 0 {
		h.chats = map[string]bool{}
		for _, c := range e.Chats {
			h.chats[c] = true
		}
	}
	return h
}

// wants reports whether the endpoint subscribed to events of this kind
// and chat.
func (h *hook) wants(kind chatd.EventKind, chat string) bool {
	return (h.kinds == nil || h.kinds[kind]) && (h.chats == nil || h.chats[chat])
}

// run makes sure the consumer exists (on every node, so events are kept
// for the endpoint from this node's first start even while another node
// delivers), then takes part in the endpoint's election until ctx ends.
func (h *hook) run(ctx context.Context) {
	defer h.sampled.Flush()
	elect.Run(ctx, elect.Config{
		What: "webhook", Name: h.name, TryLock: h.cfg.Store.TryLock, Standby: h.cfg.Standby,
		Prepare: func(ctx context.Context) error { _, err := h.ensure(ctx); return err },
		Lead:    h.consume,
		Leading: func(on bool) {
			if on {
				h.log.Debug("delivering")
				h.m.delivering.Set(1)
				return
			}
			h.m.delivering.Set(0)
			h.m.lag.Set(0)
		},
		Log: h.log, Warn: h.sampled.Warn,
	})
}

// A pull's expiry and heartbeat, as push's (see pkg/push/run.go): a pull
// lost with its NATS server is noticed in about two seconds.
const (
	pullExpiry    = 10 * time.Second
	pullHeartbeat = time.Second
	pullBatch     = 64
	// queuedPerWorker bounds the events a session queues: this many per
	// worker.
	queuedPerWorker = 64
)

func (h *hook) ensure(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := h.cfg.JS.CreateOrUpdateConsumer(ctx, h.src.stream, jetstream.ConsumerConfig{
		Durable:     h.name,
		Description: "chatd webhook " + redact(h.ep.URL),
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     h.cfg.AckWait,
		// Unlimited: the deliverer counts attempts itself and sets an event
		// aside after the last, so JetStream never drops one on its own.
		MaxDeliver:        -1,
		MaxAckPending:     h.cfg.Workers*queuedPerWorker + pullBatch,
		InactiveThreshold: h.cfg.Inactive,
		// An endpoint receives what is accepted once its consumer exists;
		// older events are in history (GET /api/chats/{id}/messages).
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", h.name, err)
	}
	return cons, nil
}

// consume feeds the consumer's events to the workers until ctx ends or the
// consume fails; it returns once every worker stopped.
func (h *hook) consume(ctx context.Context) error {
	cons, err := h.ensure(ctx)
	if err != nil {
		return err
	}
	info := cons.CachedInfo()
	it, err := cons.Messages(jetstream.PullMaxMessages(pullBatch),
		jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat))
	if err != nil {
		return fmt.Errorf("consume %s: %w", h.name, err)
	}
	defer it.Stop()
	s := newSession(ctx, h, cons)
	defer s.stop()
	if info.NumAckPending > 0 && !s.catchUp(it, info) {
		return nil
	}
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		switch {
		case err == nil:
			s.dispatch(msg)
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return errors.New("the consume stopped")
		case errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound):
			return fmt.Errorf("consume %s: %w", h.name, err)
		default:
			// Missed heartbeats and the like: the iterator pulls again;
			// the pause keeps a persistent error from spinning.
			h.sampled.Warn("reading the endpoint's events from the stream failed; pulling again, its deliveries wait meanwhile (check NATS)", "err", err)
			elect.Sleep(ctx, 50*time.Millisecond)
		}
	}
}
