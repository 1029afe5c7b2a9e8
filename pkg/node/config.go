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
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
)

// DefaultMaxGroupMembers is the group size cap when Config.MaxGroupMembers is zero.
const DefaultMaxGroupMembers = store.DefaultMaxGroupMembers

// Presence defaults, for flags.
const (
	DefaultPresenceTTL      = signal.DefaultPresenceTTL
	DefaultPresenceRefresh  = signal.DefaultPresenceRefresh
	DefaultPresenceAudience = signal.DefaultPresenceAudience
)

// DefaultNATSUnreachable is Config.NATSUnreachable's default, for flags.
const DefaultNATSUnreachable = push.DefaultUnreachable

// Config is everything a node needs. Zero values take the defaults of the
// component they configure (docs/architecture.md, section 7 "Defaults").
type Config struct {
	// Listen is the HTTP address. Zero means 127.0.0.1:8080; port 0 picks one.
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
	// StreamName is the delivery stream's name. Empty means
	// stream.DefaultName. Two deployments sharing a NATS account need
	// different names, and different SubjectPrefixes.
	StreamName string
	// SubjectPrefix starts every subject and KV bucket this node uses: the
	// delivery stream's subjects (<prefix>.out.<chat>), the signals
	// (<prefix>.sig.<kind>.<chat>) and the presence bucket
	// (<prefix>_presence_v2, dots as underscores). Dot-separated tokens of
	// [A-Za-z0-9_-]. Empty means DefaultSubjectPrefix.
	SubjectPrefix string
	// TLSCertFile and TLSKeyFile serve HTTP and WebSocket over TLS (both or
	// neither); Node.ReloadTLS reads them again. Empty: plain HTTP.
	TLSCertFile string
	TLSKeyFile  string
	// JWTSecret signs tokens. Empty in embedded mode: generated once and kept
	// in DataDir. Required with an external database (all nodes must share it).
	JWTSecret string
	// JWKS makes the node also accept an identity provider's RS256, ES256
	// and EdDSA tokens (see api.JWKSConfig). Zero URL: HS256 tokens only.
	JWKS api.JWKSConfig
	// NodeID names this node's durable consumer. Empty: generated once and
	// kept in DataDir.
	NodeID string
	// AllowedOrigins for browser WebSockets (see api.Config).
	AllowedOrigins []string
	// AdminUsers may read /api/admin/outbox.
	AdminUsers []string
	// DevLogin enables POST /api/dev/login, a token for any user name to
	// whoever asks (see api.Config.DevLogin): for `make run` and the
	// browser tests only, never in production. False: the route is 404.
	DevLogin bool
	// HTTPReadTimeout, MaxHeaderBytes and MaxConnections bound the HTTP
	// edge (see api.Config's ReadTimeout, MaxHeaderBytes, MaxConnections).
	// Zero takes the api defaults: 10 s, 4 KiB, 10000.
	HTTPReadTimeout time.Duration
	MaxHeaderBytes  int
	MaxConnections  int
	// ShutdownDelay is how long shutdown waits after /readyz turns 503
	// before it drains anything, so a load balancer that polls readiness
	// stops sending new sockets first. Zero: no wait.
	ShutdownDelay time.Duration
	// DebugListen serves Go's profiler (/debug/pprof/) on this address.
	// Empty: no profiler.
	DebugListen string

	QueueSize    int
	BatchSize    int
	BatchDelay   time.Duration
	Workers      int
	MaxBodyBytes int
	// MaxGroupMembers caps a group's size (store.Config.MaxGroupMembers):
	// every message carries its chat's members to the delivery stream.
	// Zero means DefaultMaxGroupMembers.
	MaxGroupMembers int

	ReadBatchSize  int
	ReadBatchDelay time.Duration

	Lease       time.Duration
	MaxAttempts int
	MaxPending  int
	Grace       time.Duration
	// NATSUnreachable is how long this node may fail to reach JetStream
	// before it turns not ready and closes its sessions with 1001 (so its
	// clients reconnect to a healthy node) until NATS answers. Zero means
	// push.DefaultUnreachable.
	NATSUnreachable time.Duration
	// ConsumerCheck is how often the node checks that its consumer still
	// exists (recreating it if not). Zero means 1 s.
	ConsumerCheck time.Duration

	// PresenceTTL is how long a node's presence heartbeat lives without a
	// refresh (how soon a dead node's users go offline), PresenceRefresh
	// how often nodes rewrite theirs, and PresenceAudience the largest chat
	// whose members hear of a member's presence. Zero takes the signal
	// package's defaults: 8 s, 2.5 s, 256.
	PresenceTTL      time.Duration
	PresenceRefresh  time.Duration
	PresenceAudience int

	RatePerSecond int
	RateBurst     int
	Credits       int
	PingInterval  time.Duration
	IdleTimeout   time.Duration

	// ServiceRatePerSecond and ServiceRateBurst are api.Config's: a service
	// identity's token buckets. Zero takes the api package's defaults.
	ServiceRatePerSecond int
	ServiceRateBurst     int

	StreamReplicas int
	StreamMaxBytes int64
	StreamMaxAge   time.Duration
	// StreamDuplicates is the stream's Nats-Msg-Id window, which drops a
	// relay's republish of a row it had already stored. Zero means
	// stream.DefaultDuplicates (30 s); the server holds every id stored
	// within it in memory.
	StreamDuplicates time.Duration
	GCInterval       time.Duration
	// HistoryRetention is how long a chat's messages are kept unless the
	// chat sets its own. Zero keeps them forever (deleting history is the
	// operator's choice); otherwise it must exceed StreamMaxAge.
	HistoryRetention time.Duration

	// RelayStepDownAfter is how long this node's relay may fail to publish
	// before it gives the relay lock up for another node. Zero means
	// stream.DefaultStepDownAfter (5 s).
	RelayStepDownAfter time.Duration
	// Settle is SettleAuto or SettleOff; empty means SettleAuto. Auto
	// settles only while the node is provably alone (see settleOff); off
	// publishes every message to the stream.
	Settle string
	// SettleWait, while settling, is how long the relay keeps a
	// just-committed message out of the stream while this node's recipient
	// connections ack it; a message they all acked (or left) is deleted from
	// the outbox without a publish (stream.Settler). Zero means
	// stream.DefaultSettleWait; negative turns settling off.
	SettleWait time.Duration
	// Webhook configures the webhook endpoints and their delivery
	// (docs/integrations.md); the node fills in its JS, Stream, Store,
	// Inactive (the stream's max age), Logger and Registerer. No endpoints:
	// nothing is delivered and the accept path does no work for webhooks.
	Webhook webhook.Config

	Logger *slog.Logger
}

// DefaultStreamDuplicates is Config.StreamDuplicates's default, for flags.
const DefaultStreamDuplicates = stream.DefaultDuplicates

// DefaultSettleWait is Config.SettleWait's default, for flags.
const DefaultSettleWait = stream.DefaultSettleWait

// Config.Settle's values.
const (
	// SettleAuto keeps messages every local connection acked out of the
	// stream while the node is provably alone.
	SettleAuto = "auto"
	// SettleOff publishes every message to the stream.
	SettleOff = "off"
)

// settleOff says why settling is off for this configuration, or "" when
// the node settles, alone on the stream (the registry also checks, while it
// runs, that the stream has no consumer but this node's). Another node can
// join only through the NATS, and it needs the database too: so never with
// an external NATS, nor with the embedded one listening (--nats-listen)
// while the database is an external one the other node could share.
func (c *Config) settleOff() string {
	switch {
	case c.Settle == SettleOff:
		return "--settle off"
	case c.SettleWait < 0:
		return "--settle-wait is negative"
	case c.NATSURL != "":
		return "NATS is external (--nats-url): other nodes may read the stream"
	case c.NATSListen != "" && c.DatabaseURL != "":
		return "the embedded NATS listens (--nats-listen) and the database is external (--database-url): another node could join"
	case len(c.Webhook.Endpoints) > 0:
		return "webhooks are configured (--webhook): they need every event in the stream"
	}
	return ""
}

func (c *Config) setDefaults() error {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.DataDir == "" && (c.DatabaseURL == "" || c.NATSURL == "") {
		return errors.New("node: DataDir is required when PostgreSQL or NATS is embedded")
	}
	if c.HistoryRetention < 0 {
		return fmt.Errorf("node: history retention %v is negative; 0 keeps history forever", c.HistoryRetention)
	}
	if c.StreamMaxAge <= 0 {
		c.StreamMaxAge = stream.DefaultMaxAge
	}
	// docs/architecture.md, invariant 4: a client recovers from history what
	// live delivery gave up on, so history must outlive anything the delivery
	// buffer still holds.
	if c.HistoryRetention != 0 && c.HistoryRetention <= c.StreamMaxAge {
		return fmt.Errorf("node: history retention %v must be longer than the stream's max age %v (a recipient recovers from history what the stream dropped)", c.HistoryRetention, c.StreamMaxAge)
	}
	if c.StreamDuplicates <= 0 {
		c.StreamDuplicates = DefaultStreamDuplicates
	}
	// Under a second the window would not even cover one publish's ack
	// timeout, so a relay's retry of a stored row would be stored again;
	// JetStream itself refuses a window longer than the stream's max age.
	if c.StreamDuplicates < time.Second || c.StreamDuplicates > c.StreamMaxAge {
		return fmt.Errorf("node: the stream's duplicate window %v must be between 1s and the stream's max age %v", c.StreamDuplicates, c.StreamMaxAge)
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
	if c.RelayStepDownAfter <= 0 {
		c.RelayStepDownAfter = stream.DefaultStepDownAfter
	}
	switch c.Settle {
	case "":
		c.Settle = SettleAuto
	case SettleAuto, SettleOff:
	default:
		return fmt.Errorf("node: --settle %q: want %s or %s", c.Settle, SettleAuto, SettleOff)
	}
	if c.SettleWait == 0 {
		c.SettleWait = stream.DefaultSettleWait
	}
	// An unsettled message's lease starts only once the wait is over: a
	// wait as long as the lease would double how long a stuck client pins
	// its messages before it is abandoned.
	if lease := cmp.Or(c.Lease, push.DefaultLease); c.settleOff() == "" && c.SettleWait >= lease {
		return fmt.Errorf("node: --settle-wait %v must be shorter than the lease %v (an unacked message is leased only after the wait)", c.SettleWait, lease)
	}
	if c.PresenceTTL > 0 || c.PresenceRefresh > 0 {
		ttl, refresh := cmp.Or(c.PresenceTTL, signal.DefaultPresenceTTL), cmp.Or(c.PresenceRefresh, signal.DefaultPresenceRefresh)
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
