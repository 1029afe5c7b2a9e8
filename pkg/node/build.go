package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/changes"
	"github.com/chatd/chatd/pkg/forward"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
	"github.com/chatd/chatd/web"
	"github.com/nats-io/nats.go/jetstream"
)

// streamHeaderRoom is what a stream message's headers may take of NATS's max
// payload (which counts headers and data together): Nats-Msg-Id needs ~50
// bytes; the rest is room for headers added later.
const streamHeaderRoom = 4 << 10

// build wires the components. Dependencies point one way: api sees ingest,
// push and the store through its own small interfaces; ingest knows nothing
// of push or the relay, only the OnCommit hook set here.
func (n *Node) build(ctx context.Context, secret []byte) error {
	cfg := &n.cfg
	sc := cfg.Stream
	sc.SubjectPrefix = cfg.streamSubjects()
	var str jetstream.Stream
	err := n.untilJetStream(ctx, "delivery stream", func(ctx context.Context) (err error) {
		str, err = stream.Ensure(ctx, n.js, sc)
		return err
	})
	if err != nil {
		return err
	}
	off := cfg.settleOff()
	switch {
	case cfg.settlesTaken():
		n.log.Info("settling on: messages every local connection acked go to the webhooks only, not through live delivery, while no other consumer needs them (--settle off publishes every one for all)")
	case cfg.settlesAcross():
		n.log.Info("settling across nodes: messages every connection on every node acked stay out of the delivery stream while no consumer but the nodes' reads it (--settle off publishes every one)")
	case off == "":
		n.log.Info("settling on: messages every local connection acked stay out of the delivery stream while no other consumer reads it (--settle off publishes every one)")
	default:
		n.log.Info("settling off: every message goes to the delivery stream", "because", off)
	}
	if err := n.buildNotify(ctx, cfg); err != nil {
		return err
	}
	if err := n.buildChanges(ctx, cfg); err != nil {
		return err
	}
	if err := n.buildDelivery(cfg, off == ""); err != nil {
		return err
	}
	if err := n.buildIngest(cfg); err != nil {
		return err
	}
	rc := cfg.Reclaim
	rc.Stream, rc.Pins, rc.ConsumerPrefix, rc.OnReset = str, n.Push, push.ConsumerPrefix, n.Push.Reset
	// Always, not only with webhooks configured here: another node (or this
	// one before a restart) may deliver to an endpoint whose consumer still
	// needs what it has not acked.
	rc.AlsoPrefixes = []string{webhook.ConsumerPrefix}
	rc.Logger, rc.Registerer = n.log, n.reg
	if n.Reclaim, err = reclaim.New(rc); err != nil {
		return err
	}
	wc := cfg.Webhook
	wc.JS, wc.Stream, wc.Store, wc.Logger, wc.Registerer = n.js, cfg.Stream.Name, webhookStore{n.Store}, n.log, n.reg
	wc.Inactive = cmp.Or(wc.Inactive, cfg.Stream.MaxAge)
	if n.Notifier != nil {
		wc.NotifyStream = cfg.notifyStream()
	}
	if n.Changes != nil {
		wc.ChangesStream = cfg.changesStream()
	}
	if n.Webhooks, err = webhook.New(wc); err != nil {
		return err
	}
	if err := n.buildSignals(cfg); err != nil {
		return err
	}
	ac := cfg.API
	ac.JWTSecret, ac.Demo, ac.SDK = secret, web.Demo(), web.SDK()
	ac.Limits.Lease, ac.Limits.MaxAttempts, ac.Limits.MaxPending = cfg.Push.Lease, cfg.Push.MaxAttempts, cfg.Push.MaxPending
	ac.Limits.MaxBodyBytes = n.Ingest.MaxBodyBytes()
	ac.Chats, ac.Ingest, ac.Delivery, ac.Ready = chatsWithBatchedReads{n.Store, n.Reads}, n.Ingest, n.Push, n.ready
	ac.Postgres, ac.Outbox, ac.Registry, ac.Logger = n.postgresState, n.outboxView, n.reg, n.log
	ac.Signals, ac.Presence, ac.Webhooks = n.Signals, n.Presence, n.Webhooks
	n.API, err = api.New(ac)
	return err
}

// buildNotify makes the notifier, its recorder and its stream when
// offline notifications are on.
func (n *Node) buildNotify(ctx context.Context, cfg *Config) error {
	if !cfg.notifyOn() {
		return nil
	}
	nc := cfg.Notify
	nc.JS, nc.Stream, nc.Out, nc.SubjectPrefix = n.js, cfg.Stream.Name, cfg.notifyStream(), cfg.notifySubjects()
	if cfg.settlesTaken() {
		nc.Filter = cfg.liveSubjects()
	}
	nc.Replicas, nc.Store, nc.Logger, nc.Registerer = cfg.Stream.Replicas, notifyStore{n.Store}, n.log, n.reg
	var err error
	if n.Notifier, n.Recorder, err = notify.New(nc); err != nil {
		return err
	}
	return n.untilJetStream(ctx, "notification stream", n.Notifier.EnsureStream)
}

// buildChanges makes the chat changes publisher and its stream when an
// endpoint takes member changes or reads.
func (n *Node) buildChanges(ctx context.Context, cfg *Config) error {
	if !cfg.changesOn() {
		return nil
	}
	var err error
	n.Changes, err = changes.New(changes.Config{JS: n.js, Stream: cfg.changesStream(), SubjectPrefix: cfg.changesSubjects(),
		Replicas: cfg.Stream.Replicas, Store: changesStore{n.Store}, Logger: n.log, Registerer: n.reg})
	if err != nil {
		return err
	}
	return n.untilJetStream(ctx, "changes stream", n.Changes.EnsureStream)
}

// buildDelivery wires push and the relay: settle says whether the node
// keeps messages its connections all acked out of the stream.
func (n *Node) buildDelivery(cfg *Config, settle bool) error {
	pc := cfg.Push
	pc.NodeID, pc.JS, pc.Stream = n.nodeID, n.js, cfg.Stream.Name
	pc.Settle, pc.AloneCheck = settle, push.AloneCheckFor(cfg.Relay.SettleWait)
	if cfg.settlesAcross() {
		pc.Peers, pc.Conn, pc.ReportGather = true, n.nc, push.ReportGatherFor(cfg.Relay.SettleWait)
		pc.FastSubject, pc.SettledPrefix, pc.SkippedSubject = cfg.sharedSubject(), cfg.settledSubjects(), cfg.skippedSubject()
		// Presence is built after delivery, before anything runs.
		pc.PeerAlive = func(node string) (alive, current bool) { return n.Presence.NodeAlive(node) }
		pc.PeerLapsed = func(node string) (time.Time, bool) { return n.Presence.NodeLapsed(node) }
	}
	if cfg.settlesTaken() {
		pc.Filter, pc.TakenPrefix, pc.TakenSkippers = cfg.liveSubjects(), cfg.takenSubjects(), []string{notify.ConsumerName}
	}
	pc.Seen = func(e *chatd.Envelope) { n.marks.note(e.Message.Chat, e.Message.Seq, e.OutboxID) }
	pc.Logger, pc.Registerer = n.log, n.reg
	if n.Recorder != nil {
		pc.Acked = n.Recorder.Acked
	}
	var err error
	if n.Push, err = push.New(pc); err != nil {
		return err
	}
	rc := cfg.Relay
	rc.Outbox, rc.JS, rc.SubjectPrefix, rc.NodeID = n.Store, n.js, cfg.streamSubjects(), n.nodeID
	rc.WakeSubject = cfg.relayWakeSubject()
	// The forwarder is built with the ingest, after the relay; the lead
	// changes only once Run runs.
	rc.OnLead = func(leading bool) {
		n.leads.Store(leading)
		n.Push.Lead(leading)
		if n.Forward != nil {
			n.Forward.Lead(leading)
		}
	}
	rc.Logger, rc.Registerer = n.log, n.reg
	rc.Settler = nil
	if settle {
		rc.Settler = n.Push
		if cfg.settlesTaken() {
			rc.TakenPrefix = cfg.takenSubjects()
		}
	} else {
		rc.SettleWait = 0 // the relay's default: it waits for no acks without a Settler
	}
	n.Relay, err = stream.NewRelay(rc)
	return err
}

// buildIngest wires the group commits of sends and of read receipts.
func (n *Node) buildIngest(cfg *Config) error {
	// An envelope over the max payload would stop the relay for every chat:
	// ingest refuses such a message before it is stored.
	maxEnvelope := int(n.nc.MaxPayload()) - streamHeaderRoom
	if maxEnvelope <= 0 {
		return fmt.Errorf("nats max_payload %d leaves no room for messages: raise max_payload on the NATS server", n.nc.MaxPayload())
	}
	ic := cfg.Ingest
	ic.Store, ic.MaxEnvelopeBytes, ic.OnCommit, ic.Logger, ic.Registerer = n.Store, maxEnvelope, n.onCommit, n.log, n.reg
	var err error
	if cfg.Forward == ForwardOn {
		// The reports of settling across nodes ride the batches (pkg/push's ride.go).
		n.Forward, err = forward.New(forward.Config{Conn: n.nc, Subject: cfg.forwardSubject(), Local: n.Store,
			NodeID: n.nodeID, Attach: n.Push.AttachReports, Attached: n.Push.TakeReports, Logger: n.log, Registerer: n.reg})
		if err != nil {
			return err
		}
		n.closeFns = append(n.closeFns, n.Forward.Close)
		ic.Store = n.Forward
	}
	if n.Ingest, err = ingest.New(ic); err != nil {
		return err
	}
	if n.Forward != nil {
		n.Forward.SetIngest(n.Ingest)
	}
	rc := cfg.Reads
	rc.Store, rc.Logger = n.Store, n.log
	n.Reads, err = ingest.NewReads(rc)
	return err
}

// buildSignals wires the signal bus and presence; their Deliver is called
// only once Run subscribes, after n.API is set.
func (n *Node) buildSignals(cfg *Config) error {
	var err error
	n.Signals, err = signal.NewBus(signal.BusConfig{
		Conn: n.nc, Prefix: cfg.signalPrefix(), Deliver: func(s chatd.Signal) { n.API.Signal(s) }, Logger: n.log, Registerer: n.reg})
	if err != nil {
		return err
	}
	pc := cfg.Presence
	pc.JS, pc.NodeID, pc.Contacts, pc.ContactsAmong, pc.LastSeen = n.js, n.nodeID, n.Store.Contacts, n.Store.ContactsAmong, n.Store
	pc.Deliver = func(s chatd.Signal) { n.API.Signal(s) }
	pc.Bucket, pc.Replicas = cfg.presenceBucket(), cfg.Stream.Replicas
	pc.Logger, pc.Registerer = n.log, n.reg
	n.Presence, err = signal.NewPresence(pc)
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
// relay (kept only if this node's relay leads) and its wake-up. A batch the
// leading node committed (forwarded) was handed to its relay there.
func (n *Node) onCommit(batch []store.Accepted) {
	for i := range batch {
		n.marks.note(batch[i].Message.Chat, batch[i].Message.Seq, batch[i].OutboxID)
		if batch[i].Forwarded {
			n.Push.FastPathForwarded(&batch[i].Message, batch[i].Recipients)
		} else {
			n.Push.FastPath(&batch[i].Message, batch[i].Recipients)
		}
	}
	if own := committedHere(batch); len(own) > 0 {
		if n.cfg.settlesAcross() && n.leads.Load() {
			n.Push.Share(envelopes(own))
		}
		n.Relay.Offer(own)
		n.Relay.Wake()
	}
}

// envelopes are the batch's messages as the relay would publish them.
func envelopes(batch []store.Accepted) []chatd.Envelope {
	envs := make([]chatd.Envelope, len(batch))
	for i := range batch {
		a := &batch[i]
		envs[i] = chatd.Envelope{OutboxID: a.OutboxID, Message: a.Message, Device: a.Message.Device, Recipients: a.Recipients}
	}
	return envs
}

// committedHere is batch without what another node committed for it: all
// of it unless it was forwarded, and then only what that node gave back
// (committed here after all).
func committedHere(batch []store.Accepted) []store.Accepted {
	for i := range batch {
		if batch[i].Forwarded {
			return slices.DeleteFunc(slices.Clone(batch), func(a store.Accepted) bool { return a.Forwarded })
		}
	}
	return batch
}

// postgresState is /readyz's view of the PostgreSQL timeline and the last
// failover the store followed.
func (n *Node) postgresState() api.PostgresState {
	st := api.PostgresState{Timeline: n.Store.Timeline()}
	if f, ok := n.Store.LastFailover(); ok {
		st.LastFailover = &api.PostgresFailover{FromTimeline: f.From, ToTimeline: f.To, At: f.At.UTC()}
	}
	return st
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
