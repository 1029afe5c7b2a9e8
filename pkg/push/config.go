package push

import (
	"errors"
	"log/slog"
	"time"

	"github.com/chatd/chatd"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultFenceAfter is Config.FenceAfter's default: on top of the presence
// TTL, so a node is fenced about 20 s after it died.
const DefaultFenceAfter = 10 * time.Second

// DefaultUnreachable is Config.Unreachable's default: long enough to ride
// out a NATS reconnect, short enough that clients move to a healthy node
// before they notice the silence.
const DefaultUnreachable = 8 * time.Second

// Defaults of Config, also the flags' defaults (cmd/chatd).
const (
	DefaultLease         = 10 * time.Second
	DefaultMaxAttempts   = 3
	DefaultMaxPending    = 20
	DefaultCheckInterval = time.Second
	DefaultIdleCheck     = time.Second
	// DefaultHeldPerPending sizes Config.MaxHeld: a connection may fall this
	// many budgets behind a burst before it is closed overloaded.
	DefaultHeldPerPending = 10
)

// Config configures a Registry. Zero values take the documented defaults
// (docs/architecture.md, section 7 "Defaults").
type Config struct {
	// NodeID names this node's durable consumer ("push-<NodeID>"). Required;
	// stable across restarts so a restarted node resumes its consumer.
	NodeID string
	// JS is the JetStream context, and Stream the delivery stream's name
	// (stream.Config.Name, which the node passes in: push does not import
	// stream). Both required for Run.
	JS     jetstream.JetStream
	Stream string
	// Lease is the consumer's AckWait: how long one delivery attempt may
	// stay un-acked before JetStream redelivers it. Zero means DefaultLease.
	Lease time.Duration
	// MaxAttempts is how many times a message is sent to a recipient: after
	// the last attempt's lease expires un-acked, the recipient is abandoned
	// (closed, it resyncs from history). The consumer's MaxDeliver is one
	// more (docs/architecture.md, invariant 2): the extra delivery is never
	// sent, it only makes sure the abandon happens before JetStream gives the
	// message up. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// MaxPending is how many frames one connection may have un-acked (its
	// budget): past it, new messages are held for it and sent as it acks
	// (pace.go). Zero means DefaultMaxPending.
	MaxPending int
	// MaxHeld bounds the messages held for one connection at its budget;
	// one more and it is withdrawn as overloaded. Zero means
	// DefaultHeldPerPending × MaxPending.
	MaxHeld int
	// Grace spares a connection younger than this from the attempts reaper.
	// Zero (the default) means no grace: measured counter-productive under load.
	Grace time.Duration
	// MaxAckPending is the consumer's limit of un-acked messages. At the
	// limit JetStream stops delivering to the whole node, so it must sit far
	// above the node's peak un-acked count. Zero means 65536.
	MaxAckPending int
	// InactiveThreshold lets JetStream delete the consumer of a node that is
	// gone, so it no longer holds the reclaim floor. Zero means 10 minutes.
	InactiveThreshold time.Duration
	// FastMemory is how long a fast-path delivery is remembered while its
	// stream message has not arrived yet; past it the stream delivery sends
	// the frame again. Zero means 2 minutes.
	FastMemory time.Duration
	// Settle keeps the fast path's account of each message for a relay that
	// asks Settled before it publishes (settle.go). Alone, only for a node no
	// other node can join: the relay then keeps settled messages out of the
	// stream, which other nodes' connections would need. Run also lists the
	// stream's consumers, and while any but this node's exists no message
	// reads settled. False: no account is kept, nothing reads settled.
	Settle bool
	// Peers, with Settle, settles across nodes (peers.go): the other nodes'
	// consumers in a listing are peers, each of which must report a message
	// settled, rather than consumers that end settling. Conn carries the
	// messages the node shares (Share) under FastSubject, the peers'
	// reports under SettledPrefix plus the committing node's id, and which
	// shared messages the committing node kept out of the stream under
	// SkippedSubject.
	Peers          bool
	Conn           *nats.Conn
	FastSubject    string
	SettledPrefix  string
	SkippedSubject string
	// PeerAlive, with Peers, says whether another node's presence heartbeat
	// is live, and whether that view is current (signal.Presence.NodeAlive).
	// A peer seen alive in the leading node's listings whose heartbeat then
	// stays lapsed for FenceAfter is fenced (fence.go). Nil: none is; a dead
	// node's consumer holds the settling until JetStream removes it
	// (InactiveThreshold). Zero FenceAfter means DefaultFenceAfter.
	PeerAlive func(node string) (alive, current bool)
	// PeerLapsed, with PeerAlive, says when another node was last heard if
	// this node's presence saw its heartbeat lapse and not come back
	// (signal.Presence.NodeLapsed). The first listing after the relay
	// starts leading counts such a peer as seen alive until then, so a node
	// that died under the previous leader is fenced too. Nil: it is not.
	PeerLapsed func(node string) (since time.Time, ok bool)
	FenceAfter time.Duration
	// ReportGather, with Peers, is how long the node gathers its reports
	// and skipped ids before it sends them. Zero means DefaultReportGather;
	// ReportGatherFor fits it to a relay's settle wait.
	ReportGather time.Duration
	// Filter, if set, is the one subject filter of this node's consumer
	// (the node sets <prefix>.out.*, one token after it): what the relay
	// publishes under its TakenPrefix never comes to it. Empty: it reads
	// every subject of the stream.
	Filter string
	// TakenPrefix, with Settle, says that the relay publishes the settled
	// messages every recipient took live under TakenPrefix+chat rather than
	// keeping them out of the stream (stream.RelayConfig.TakenPrefix). Then
	// another consumer keeps the node settling if it reads those subjects
	// (no filter, or one that takes them) or is named in TakenSkippers,
	// which need none of them (the notifier: nobody is behind on them).
	TakenPrefix   string
	TakenSkippers []string
	// AloneCheck, with Settle, is how often Run lists the stream's
	// consumers while a message this node committed waits to read settled.
	// A message reads settled only once a listing begun after its fast
	// path found none but this node's, so it bounds how long an acked
	// message waits to read settled. Zero means 50 ms.
	AloneCheck time.Duration
	// IdleCheck, with Settle, is how often Run lists them while no such
	// message waits (and the fast path has not woken it to list for one):
	// it keeps the alone gauge, the log of other consumers and the fence's
	// view of dead peers current. Zero means DefaultIdleCheck.
	IdleCheck time.Duration
	// listByHand keeps Run from listing the consumers at all, so a test
	// decides every listing (export_test.go); production never sets it.
	listByHand bool
	// CheckInterval is how often Run asks JetStream whether the node's
	// consumer still exists (and bounds how long one check may take). Zero
	// means DefaultCheckInterval.
	CheckInterval time.Duration
	// Unreachable is how long checks may fail (JetStream not answering)
	// before the node closes every session (ReasonUnavailable) and refuses
	// new ones until JetStream answers, so clients reconnect to a node that
	// still delivers. Zero means DefaultUnreachable.
	Unreachable time.Duration
	// PullBatch is how many stream messages the consumer buffers. Zero means 512.
	PullBatch int
	// Now is the clock for leases and reapers. Nil means time.Now.
	Now func() time.Time
	// Seen, if set, is told of every envelope the consumer takes, and of
	// every message another node shares (Peers), before delivery (the node
	// keeps the highest seq per chat for a PostgreSQL failover). It must be
	// quick and safe for concurrent use.
	Seen func(*chatd.Envelope)
	// Acked, if set, is told of every message a connection acked, after
	// the fact (offline notifications record how far each user got). It
	// must be quick and safe for concurrent use.
	Acked func(user, chat string, seq int64)
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the push metrics; nil means none.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.NodeID == "" {
		return errors.New("push: Config.NodeID is required")
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxHeld <= 0 {
		c.MaxHeld = DefaultHeldPerPending * c.MaxPending
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 65536
	}
	if c.InactiveThreshold <= 0 {
		c.InactiveThreshold = 10 * time.Minute
	}
	if c.Peers && (!c.Settle || c.Conn == nil || c.FastSubject == "" || c.SettledPrefix == "" || c.SkippedSubject == "" || c.TakenPrefix != "") {
		return errors.New("push: Config.Peers needs Settle, Conn, FastSubject, SettledPrefix and SkippedSubject, and no TakenPrefix")
	}
	if c.FastMemory <= 0 {
		c.FastMemory = 2 * time.Minute
	}
	if c.FenceAfter <= 0 {
		c.FenceAfter = DefaultFenceAfter
	}
	if c.ReportGather <= 0 {
		c.ReportGather = DefaultReportGather
	}
	if c.AloneCheck <= 0 {
		c.AloneCheck = 50 * time.Millisecond
	}
	if c.IdleCheck <= 0 {
		c.IdleCheck = DefaultIdleCheck
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.Unreachable <= 0 {
		c.Unreachable = DefaultUnreachable
	}
	if c.PullBatch <= 0 {
		c.PullBatch = 512
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
