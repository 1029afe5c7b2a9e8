package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
	"github.com/chatd/chatd/web"
)

// streamHeaderRoom is what a stream message's headers may take of NATS's max
// payload (which counts headers and data together): Nats-Msg-Id needs ~50
// bytes; the rest is room for headers added later.
const streamHeaderRoom = 4 << 10

// build wires the components. Dependencies point one way: api sees ingest,
// push and the store through its own small interfaces; ingest knows nothing
// of push or the relay, only the OnCommit hook set here.
func (n *Node) build(ctx context.Context, secret []byte) error {
	cfg := n.cfg
	str, err := stream.Ensure(ctx, n.js, stream.Config{
		Name: cfg.StreamName, SubjectPrefix: cfg.streamSubjects(), Replicas: cfg.StreamReplicas, MaxBytes: cfg.StreamMaxBytes, MaxAge: cfg.StreamMaxAge,
		Duplicates: cfg.StreamDuplicates})
	if err != nil {
		return err
	}
	off := cfg.settleOff()
	if off == "" {
		n.log.Info("settling on: messages every local connection acked stay out of the delivery stream while no other consumer reads it (--settle off publishes every one)")
	} else {
		n.log.Info("settling off: every message goes to the delivery stream", "because", off)
	}
	n.Push, err = push.New(push.Config{
		NodeID: n.nodeID, JS: n.js, Stream: cfg.StreamName, Lease: cfg.Lease, MaxAttempts: cfg.MaxAttempts,
		MaxPending: cfg.MaxPending, Grace: cfg.Grace, Unreachable: cfg.NATSUnreachable,
		CheckInterval: cfg.ConsumerCheck, Settle: off == "", AloneCheck: push.AloneCheckFor(cfg.SettleWait),
		Seen:   func(e *chatd.Envelope) { n.marks.note(e.Message.Chat, e.Message.Seq, e.OutboxID) },
		Logger: n.log, Registerer: n.reg,
	})
	if err != nil {
		return err
	}
	rc := stream.RelayConfig{
		Outbox: n.Store, JS: n.js, SubjectPrefix: cfg.streamSubjects(), StepDownAfter: cfg.RelayStepDownAfter, NodeID: n.nodeID,
		Logger: n.log, Registerer: n.reg}
	if off == "" {
		rc.Settler, rc.SettleWait = n.Push, cfg.SettleWait
	}
	if n.Relay, err = stream.NewRelay(rc); err != nil {
		return err
	}
	// An envelope over the max payload would stop the relay for every chat:
	// ingest refuses such a message before it is stored.
	maxEnvelope := int(n.nc.MaxPayload()) - streamHeaderRoom
	if maxEnvelope <= 0 {
		return fmt.Errorf("nats max_payload %d leaves no room for messages: raise max_payload on the NATS server", n.nc.MaxPayload())
	}
	n.Ingest, err = ingest.New(ingest.Config{
		Store: n.Store, QueueSize: cfg.QueueSize, BatchSize: cfg.BatchSize, BatchDelay: cfg.BatchDelay,
		Workers: cfg.Workers, MaxBodyBytes: cfg.MaxBodyBytes, MaxEnvelopeBytes: maxEnvelope,
		OnCommit: n.onCommit, Logger: n.log, Registerer: n.reg,
	})
	if err != nil {
		return err
	}
	n.Reads, err = ingest.NewReads(ingest.ReadsConfig{
		Store: n.Store, BatchSize: cfg.ReadBatchSize, BatchDelay: cfg.ReadBatchDelay, Logger: n.log,
	})
	if err != nil {
		return err
	}
	n.Reclaim, err = reclaim.New(reclaim.Config{
		Stream: str, Pins: n.Push, ConsumerPrefix: push.ConsumerPrefix, Interval: cfg.GCInterval, OnReset: n.Push.Reset,
		// Always, not only with webhooks configured here: another node (or
		// this one before a restart) may deliver to an endpoint whose
		// consumer still needs what it has not acked.
		AlsoPrefixes: []string{webhook.ConsumerPrefix},
		Logger:       n.log, Registerer: n.reg,
	})
	if err != nil {
		return err
	}
	wc := cfg.Webhook
	wc.JS, wc.Stream, wc.Store, wc.Logger, wc.Registerer = n.js, cfg.StreamName, webhookStore{n.Store}, n.log, n.reg
	wc.Inactive = cmp.Or(wc.Inactive, cfg.StreamMaxAge)
	if n.Webhooks, err = webhook.New(wc); err != nil {
		return err
	}
	// Deliver is called only once Run subscribes, after n.API is set.
	n.Signals, err = signal.NewBus(signal.BusConfig{
		Conn: n.nc, Prefix: cfg.signalPrefix(), Deliver: func(s chatd.Signal) { n.API.Signal(s) }, Logger: n.log, Registerer: n.reg})
	if err != nil {
		return err
	}
	n.Presence, err = signal.NewPresence(signal.PresenceConfig{
		JS: n.js, NodeID: n.nodeID, Contacts: n.Store.Contacts, ContactsAmong: n.Store.ContactsAmong, LastSeen: n.Store, Deliver: func(s chatd.Signal) { n.API.Signal(s) },
		Bucket: cfg.presenceBucket(), Replicas: cfg.StreamReplicas,
		TTL: cfg.PresenceTTL, Refresh: cfg.PresenceRefresh, Audience: cfg.PresenceAudience,
		Logger: n.log, Registerer: n.reg,
	})
	if err != nil {
		return err
	}
	n.API, err = api.New(api.Config{
		JWTSecret:      secret,
		JWKS:           cfg.JWKS,
		AllowedOrigins: cfg.AllowedOrigins,
		AdminUsers:     cfg.AdminUsers,
		Demo:           web.Demo(),
		SDK:            web.SDK(),
		DevLogin:       cfg.DevLogin,
		ReadTimeout:    cfg.HTTPReadTimeout,
		MaxHeaderBytes: cfg.MaxHeaderBytes,
		MaxConnections: cfg.MaxConnections,
		Limits: api.Limits{
			Lease: positiveOr(cfg.Lease, push.DefaultLease), MaxAttempts: positiveOr(cfg.MaxAttempts, push.DefaultMaxAttempts),
			MaxPending:   positiveOr(cfg.MaxPending, push.DefaultMaxPending),
			MaxBodyBytes: n.Ingest.MaxBodyBytes(), RatePerSecond: cfg.RatePerSecond, RateBurst: cfg.RateBurst,
			Credits: cfg.Credits, PingInterval: cfg.PingInterval, IdleTimeout: cfg.IdleTimeout,
		},
		Chats: chatsWithBatchedReads{n.Store, n.Reads}, Ingest: n.Ingest, Delivery: n.Push, Ready: n.ready,
		Outbox: n.outboxView, Registry: n.reg, Logger: n.log,
		Signals: n.Signals, Presence: n.Presence, Webhooks: n.Webhooks,
		ServiceRatePerSecond: cfg.ServiceRatePerSecond, ServiceRateBurst: cfg.ServiceRateBurst,
	})
	return err
}

// chatsWithBatchedReads is the store as the API sees it, with read
// receipts going through the group commit of read state.
type chatsWithBatchedReads struct {
	*store.Store
	reads *ingest.Reads
}

// MarkRead stores a read receipt in the next read-state batch.
func (c chatsWithBatchedReads) MarkRead(ctx context.Context, user, chatID, uptoMsgID string) (chatd.ReadPosition, error) {
	return c.reads.MarkRead(ctx, user, chatID, uptoMsgID)
}

// onCommit runs after each committed batch, after its senders were answered:
// the fast path to local recipients, then the hand-off of the batch to the
// relay (kept only if this node's relay leads) and its wake-up.
func (n *Node) onCommit(batch []store.Accepted) {
	for i := range batch {
		n.marks.note(batch[i].Message.Chat, batch[i].Message.Seq, batch[i].OutboxID)
		n.Push.FastPath(&batch[i].Message, batch[i].Recipients)
	}
	n.Relay.Offer(batch)
	n.Relay.Wake()
}

// ready reports whether PostgreSQL (with migrations applied) and NATS
// answer, and this node's consumer exists and is consumed (before that, or
// after NATS was unreachable past the bound, its clients belong elsewhere).
func (n *Node) ready(ctx context.Context) error {
	if err := n.Push.Ready(); err != nil {
		return err
	}
	if err := n.Store.Ready(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !n.nc.IsConnected() {
		return errors.New("nats: not connected")
	}
	if _, err := n.js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// OutboxView is the admin view of the delivery buffer.
type OutboxView struct {
	PostgresDepth     int64            `json:"postgres_outbox_depth"`
	PostgresOldestAge float64          `json:"postgres_outbox_oldest_age_seconds"`
	Stream            reclaim.Snapshot `json:"stream"`
	Pins              []push.Pin       `json:"pins"`
	Connections       int              `json:"connections"`
}

// outboxView gathers the admin view: both buffers, the floor and who pins it.
func (n *Node) outboxView(ctx context.Context) (any, error) {
	st, err := n.Store.OutboxStats(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := n.Reclaim.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	v := OutboxView{PostgresDepth: st.Depth, Stream: snap, Pins: n.Push.Pins(), Connections: n.Push.Connections()}
	if !st.Oldest.IsZero() {
		v.PostgresOldestAge = time.Since(st.Oldest).Seconds()
	}
	return v, nil
}

// positiveOr is v, or def when v is not positive: push's rule for a zero or
// negative setting, for the limits the API announces on its behalf.
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
