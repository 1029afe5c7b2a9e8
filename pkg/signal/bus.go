package signal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultPrefix is the subject prefix of signals: a typing signal for chat C
// goes to "chat.sig.typing.C", a receipt to "chat.sig.receipt.C".
const DefaultPrefix = "chat.sig"

// DefaultQueue is how many incoming signals wait for delivery by default.
const DefaultQueue = 4096

// BusConfig configures a Bus. Zero values take the documented defaults.
type BusConfig struct {
	// Conn is the node's NATS connection. Required.
	Conn *nats.Conn
	// Deliver hands one incoming signal (from any node, this one included)
	// to this node's live connections. It runs on the Bus's goroutine and
	// must not block. Required.
	Deliver func(chatd.Signal)
	// Prefix is the subject prefix. Zero means DefaultPrefix.
	Prefix string
	// Queue bounds the incoming signals waiting for Deliver; beyond it NATS
	// drops them (a slow consumer): signals are best effort, and a backlog
	// of stale typing frames is worth less than the memory. Zero means
	// DefaultQueue.
	Queue int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the bus's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
}

// Bus publishes typing and receipt signals on core NATS and delivers the
// ones every node publishes (its own included: NATS echoes them back, so a
// receipt has one fan-out path whatever node its reader is on). Safe for
// concurrent use; Publish works before Run, but nothing is delivered until
// Run subscribes.
//
// One subject per kind and chat, with the recipients in the payload: every
// node subscribes to each kind's wildcard, because any node may hold a
// member's connection, and carrying the member list spares every node a
// store lookup per signal. The chat in the subject costs nothing and lets
// an operator watch one chat with `nats sub chat.sig.*.C`.
type Bus struct {
	cfg     BusConfig
	log     *slog.Logger
	sampled *logsample.Sampler
	metrics *busMetrics
}

// NewBus returns a Bus; call Run to receive.
func NewBus(cfg BusConfig) (*Bus, error) {
	switch {
	case cfg.Conn == nil:
		return nil, errors.New("signal: BusConfig.Conn is required")
	case cfg.Deliver == nil:
		return nil, errors.New("signal: BusConfig.Deliver is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("component", "signal")
	return &Bus{cfg: cfg, log: log, sampled: logsample.New(log, logsample.Config{}), metrics: newBusMetrics(cfg.Registerer)}, nil
}

// Subject is the subject sig is published on.
func (b *Bus) Subject(sig *chatd.Signal) string {
	return b.cfg.Prefix + "." + string(sig.Kind) + "." + sig.Chat
}

// Publish sends sig to every node. It does not wait for the network (core
// NATS buffers the write); an error means the connection is closed or the
// signal cannot be encoded, and the signal is lost, as best effort allows.
// Only typing and receipt signals travel: presence is the KV bucket's.
func (b *Bus) Publish(sig chatd.Signal) error {
	if sig.Kind != chatd.SignalTyping && sig.Kind != chatd.SignalReceipt {
		return fmt.Errorf("signal: publish %q: only typing and receipts travel on the bus", sig.Kind)
	}
	data, err := json.Marshal(&sig)
	if err != nil {
		b.metrics.lost.WithLabelValues("publish").Inc()
		return fmt.Errorf("encode signal: %w", err)
	}
	if err := b.cfg.Conn.Publish(b.Subject(&sig), data); err != nil {
		b.metrics.lost.WithLabelValues("publish").Inc()
		return fmt.Errorf("publish signal: %w", err)
	}
	b.metrics.published.WithLabelValues(string(sig.Kind)).Inc()
	return nil
}

// Run subscribes and delivers incoming signals until ctx ends, then
// unsubscribes and returns (nil) once no delivery runs.
func (b *Bus) Run(ctx context.Context) error {
	defer b.sampled.Flush()
	ch := make(chan *nats.Msg, b.cfg.Queue)
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	for _, k := range []chatd.SignalKind{chatd.SignalTyping, chatd.SignalReceipt} {
		s, err := b.cfg.Conn.ChanSubscribe(b.cfg.Prefix+"."+string(k)+".*", ch)
		if err != nil {
			return fmt.Errorf("subscribe to %s signals: %w", k, err)
		}
		subs = append(subs, s)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-ch:
			var sig chatd.Signal
			if err := json.Unmarshal(m.Data, &sig); err != nil {
				b.metrics.lost.WithLabelValues("decode").Inc()
				b.sampled.Warn("undecodable signal", "subject", m.Subject, "err", err)
				continue
			}
			b.metrics.received.WithLabelValues(string(sig.Kind)).Inc()
			b.cfg.Deliver(sig)
		}
	}
}
