// Package node assembles one chatd node from its parts: the embedded
// services (or external PostgreSQL and NATS), the store, ingest, the relay,
// push, reclaim and the HTTP API, and shuts them down in order. cmd/chatd
// turns flags into a Config and calls it; end-to-end tests and chatload start
// a real node in-process through it.
package node

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
)

// DefaultListen is Config.Listen's default.
const DefaultListen = "127.0.0.1:8080"

// Config is everything a node needs: the node's own settings (where it
// listens, where its data and services are, its identity), then each
// component's config, whose zero values take that component's defaults
// (docs/architecture.md, section 7 "Defaults"). The node fills in what it
// wires at run time, overwriting whatever a caller put there: every
// component's Logger and Registerer, and the fields named under each.
type Config struct {
	// Listen is the HTTP address. Zero means DefaultListen; port 0 picks one.
	Listen string
	// DataDir holds the embedded PostgreSQL cluster, the JetStream store,
	// the generated JWT secret and the node id. Required in embedded mode.
	DataDir string
	// DatabaseURL is an external PostgreSQL. Empty starts the managed local one.
	DatabaseURL string
	// NATSURL is an external NATS cluster. Empty starts NATS in-process.
	NATSURL string
	// NATSListen opens a TCP listener on the embedded NATS (for the nats CLI).
	NATSListen string
	// NATS holds the credentials and TLS of the connection to NATSURL.
	// Zero: anonymous, and TLS only if the URL asks for it.
	NATS NATSOptions
	// SubjectPrefix starts every subject and KV bucket this node uses: the
	// delivery stream's subjects (<prefix>.out.<chat>), the signals
	// (<prefix>.sig.<kind>.<chat>) and the presence bucket
	// (<prefix>_presence_v2, dots as underscores). Dot-separated tokens of
	// [A-Za-z0-9_-]. Empty means DefaultSubjectPrefix. Two deployments
	// sharing a NATS account need different ones, and different
	// Stream.Names.
	SubjectPrefix string
	// TLSCertFile and TLSKeyFile serve HTTP and WebSocket over TLS (both or
	// neither); Node.ReloadTLS reads them again. Empty: plain HTTP.
	TLSCertFile string
	TLSKeyFile  string
	// JWTSecret signs tokens. Empty in embedded mode: generated once and kept
	// in DataDir. Required with an external database (all nodes must share it).
	JWTSecret string
	// NodeID names this node's durable consumer. Empty: generated once and
	// kept in DataDir.
	NodeID string
	// ShutdownDelay is how long shutdown waits after /readyz turns 503
	// before it drains anything, so a load balancer that polls readiness
	// stops sending new sockets first. Zero: no wait.
	ShutdownDelay time.Duration
	// DebugListen serves Go's profiler (/debug/pprof/) on this address.
	// Empty: no profiler.
	DebugListen string
	// HistoryRetention is how long a chat's messages are kept unless the
	// chat sets its own. Zero keeps them forever (deleting history is the
	// operator's choice); otherwise it must exceed Stream.MaxAge.
	HistoryRetention time.Duration
	// Settle is SettleAuto or SettleOff; empty means SettleAuto. Auto
	// settles only while the node is provably alone (see settleOff); off
	// publishes every message to the stream. Relay.SettleWait is how long a
	// message waits for its acks while settling; negative turns settling off.
	Settle string
	// Forward is ForwardOn or ForwardOff; empty means ForwardOn. On, a node
	// whose relay stands by sends each commit batch to the node whose
	// relay leads, which commits it with its own (pkg/forward); off, every
	// node commits its own batches.
	Forward string

	// API is the HTTP edge, identity and per-connection limits; the node
	// fills in JWTSecret (from the field above), Demo, SDK, the announced
	// delivery limits (from Push), Limits.MaxBodyBytes (Ingest's), the
	// components it serves, and ignores Listen (the node listens).
	API api.Config
	// Ingest is the group commit of sends; the node fills in Store,
	// MaxEnvelopeBytes (from NATS's max payload) and OnCommit.
	Ingest ingest.Config
	// Reads is the group commit of read receipts; the node fills in Store.
	Reads ingest.ReadsConfig
	// Store is the PostgreSQL store; the node fills in MinChatRetention
	// (Stream.MaxAge) and HighWater.
	Store store.Config
	// Stream is the delivery stream; the node fills in SubjectPrefix. Its
	// Name, when not the default, must be unique per NATS account.
	Stream stream.Config
	// Relay moves the outbox into the stream; the node fills in Outbox,
	// JS, SubjectPrefix, WakeSubject, NodeID and, while settling, Settler.
	Relay stream.RelayConfig
	// Push is live delivery; the node fills in NodeID, JS, Stream, Settle,
	// AloneCheck and Seen.
	Push push.Config
	// Reclaim purges the stream; the node fills in Stream, Pins, the
	// consumer prefixes and OnReset.
	Reclaim reclaim.Config
	// Presence is who is online; the node fills in JS, NodeID, the
	// contact lookups, Deliver, Bucket and Replicas (Stream.Replicas).
	Presence signal.PresenceConfig
	// Webhook configures the webhook endpoints and their delivery
	// (docs/integrations.md); the node fills in its JS, Stream, Store and
	// Inactive (the stream's max age, when zero). No endpoints: nothing is
	// delivered and the accept path does no work for webhooks.
	Webhook webhook.Config
	// Notify configures offline notifications (docs/integrations.md): on
	// while After is positive and an endpoint takes notify events; the
	// node fills in the rest.
	Notify notify.Config

	Logger *slog.Logger
}

// notifyOn reports whether offline notifications are on: a window is set
// and some endpoint takes them.
func (c *Config) notifyOn() bool {
	if c.Notify.After <= 0 {
		return false
	}
	for _, e := range c.Webhook.Endpoints {
		if len(e.Kinds) == 0 || slices.Contains(e.Kinds, chatd.EventNotify) {
			return true
		}
	}
	return false
}

// changesWanted reports whether some endpoint takes chat changes of kind
// (member or read): only then does the store record them.
func (c *Config) changesWanted(kind chatd.EventKind) bool {
	return slices.ContainsFunc(c.Webhook.Endpoints, func(e webhook.Endpoint) bool { return e.WantsChanges(kind) })
}

// changesOn reports whether chat changes are published: some endpoint
// takes them.
func (c *Config) changesOn() bool {
	return c.changesWanted(chatd.EventMember) || c.changesWanted(chatd.EventRead)
}

// Config.Settle's values.
const (
	// SettleAuto keeps messages every local connection acked out of the
	// stream while the node is provably alone.
	SettleAuto = "auto"
	// SettleOff publishes every message to the stream.
	SettleOff = "off"
)

// Config.Forward's values.
const (
	ForwardOn  = "on"
	ForwardOff = "off"
)

// settleOff says why settling is off for this configuration, or "" when
// the node settles: alone on the stream where no other node can join (the
// registry also checks, while it runs, that the stream has no consumer but
// this node's), or across nodes (settlesAcross) where one can. Another node
// can join only through the NATS, and it needs the database too: so with an
// external NATS, or with the embedded one listening (--nats-listen) while
// the database is an external one the other node could share.
func (c *Config) settleOff() string {
	switch {
	case c.Settle == SettleOff:
		return "--settle off"
	case c.Relay.SettleWait < 0:
		return "--settle-wait is negative"
	case c.nodesCanJoin() && c.Forward == ForwardOff:
		return "--forward-commits off: each node commits its own sends, and only the node whose relay leads settles"
	case c.nodesCanJoin() && len(c.Webhook.Endpoints) > 0:
		return "webhooks on a node others can join: the endpoints need every event in the stream"
	}
	return ""
}

// nodesCanJoin: another node can share this node's stream and database.
func (c *Config) nodesCanJoin() bool {
	return c.NATSURL != "" || (c.NATSListen != "" && c.DatabaseURL != "")
}

// settlesAcross: the node settles with the other nodes, which report what
// they settled of the messages it committed and shared (push.Config.Peers).
func (c *Config) settlesAcross() bool {
	return c.settleOff() == "" && c.nodesCanJoin()
}

// settlesTaken: the node settles and webhooks need every event in the
// stream, so the relay publishes settled messages too, those every
// recipient took live under takenSubjects, which live delivery and the
// notifier do not read (stream.RelayConfig.TakenPrefix).
func (c *Config) settlesTaken() bool {
	return c.settleOff() == "" && !c.nodesCanJoin() && len(c.Webhook.Endpoints) > 0
}

func (c *Config) setDefaults() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.DataDir == "" && (c.DatabaseURL == "" || c.NATSURL == "") {
		return errors.New("node: DataDir is required when PostgreSQL or NATS is embedded")
	}
	if err := c.setStreamDefaults(); err != nil {
		return err
	}
	if err := c.NATS.check(c.NATSURL != ""); err != nil {
		return err
	}
	if err := c.setNaming(); err != nil {
		return err
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("node: --tls-cert and --tls-key go together")
	}
	if err := c.setSettleDefaults(); err != nil {
		return err
	}
	if c.Presence.TTL > 0 || c.Presence.Refresh > 0 {
		ttl, refresh := cmp.Or(c.Presence.TTL, signal.DefaultPresenceTTL), cmp.Or(c.Presence.Refresh, signal.DefaultPresenceRefresh)
		// Two refreshes in a row may be lost before a live user looks offline.
		if refresh*2 >= ttl {
			return fmt.Errorf("node: presence refresh %v must be less than half the presence TTL %v (a live user would flicker offline)", refresh, ttl)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// setStreamDefaults defaults the stream's max age and duplicate window,
// which the node checks against each other and against history retention.
func (c *Config) setStreamDefaults() error {
	if c.HistoryRetention < 0 {
		return fmt.Errorf("node: history retention %v is negative; 0 keeps history forever", c.HistoryRetention)
	}
	if c.Stream.MaxAge <= 0 {
		c.Stream.MaxAge = stream.DefaultMaxAge
	}
	// docs/architecture.md, invariant 4: a client recovers from history what
	// live delivery gave up on, so history must outlive anything the delivery
	// buffer still holds.
	if c.HistoryRetention != 0 && c.HistoryRetention <= c.Stream.MaxAge {
		return fmt.Errorf("node: history retention %v must be longer than the stream's max age %v (a recipient recovers from history what the stream dropped)", c.HistoryRetention, c.Stream.MaxAge)
	}
	if c.Stream.Duplicates <= 0 {
		c.Stream.Duplicates = stream.DefaultDuplicates
	}
	// Under a second the window would not even cover one publish's ack
	// timeout, so a relay's retry of a stored row would be stored again;
	// JetStream itself refuses a window longer than the stream's max age.
	if c.Stream.Duplicates < time.Second || c.Stream.Duplicates > c.Stream.MaxAge {
		return fmt.Errorf("node: the stream's duplicate window %v must be between 1s and the stream's max age %v", c.Stream.Duplicates, c.Stream.MaxAge)
	}
	return nil
}

// onOrOff defaults an empty two-valued setting to on, and refuses any
// value but on and off.
func onOrOff(flag string, v *string, on, off string) error {
	switch *v {
	case "":
		*v = on
	case on, off:
	default:
		return fmt.Errorf("node: --%s %q: want %s or %s", flag, *v, on, off)
	}
	return nil
}

// setSettleDefaults defaults Forward, Settle and the settle wait, and the
// delivery limits the API announces and the settle wait is checked against.
func (c *Config) setSettleDefaults() error {
	if err := onOrOff("forward-commits", &c.Forward, ForwardOn, ForwardOff); err != nil {
		return err
	}
	if err := onOrOff("settle", &c.Settle, SettleAuto, SettleOff); err != nil {
		return err
	}
	if c.Relay.SettleWait == 0 {
		c.Relay.SettleWait = stream.DefaultSettleWait
	}
	c.Push.Lease = positiveOr(c.Push.Lease, push.DefaultLease)
	c.Push.MaxAttempts = positiveOr(c.Push.MaxAttempts, push.DefaultMaxAttempts)
	c.Push.MaxPending = positiveOr(c.Push.MaxPending, push.DefaultMaxPending)
	// An unsettled message's lease starts only once the wait is over: a
	// wait as long as the lease would double how long a stuck client pins
	// its messages before it is abandoned.
	if c.settleOff() == "" && c.Relay.SettleWait >= c.Push.Lease {
		return fmt.Errorf("node: --settle-wait %v must be shorter than the lease %v (an unacked message is leased only after the wait)", c.Relay.SettleWait, c.Push.Lease)
	}
	return nil
}

// positiveOr is v, or def when v is not positive: the components' own rule
// for a zero or negative setting.
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
