package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Limits, also the flags' defaults (cmd/chatd).
const (
	DefaultRatePerSecond = 50
	DefaultRateBurst     = 100
	DefaultCredits       = 64
	DefaultPingInterval  = 10 * time.Second
	DefaultIdleTimeout   = 30 * time.Second
)

// Limits are the per-connection limits the gateway enforces and announces in
// `hello`. Zero values take the documented defaults.
type Limits struct {
	// Lease, MaxAttempts and MaxPending are push's delivery limits
	// (push.Config), announced only: the node copies them in. Zero is
	// announced as zero.
	Lease       time.Duration
	MaxAttempts int
	MaxPending  int
	// MaxBodyBytes is the body limit ingest enforces (announced only:
	// chatd.SendRequest.Check, in ingest, is the one check of every path;
	// the node sets it from ingest). Zero means 4096.
	MaxBodyBytes int
	// MaxFrameBytes bounds a client frame; larger closes with 4400. Zero means
	// 6×MaxBodyBytes+1024: room for a maximal body even if every byte needs a
	// \u escape, so an honest client never trips it.
	MaxFrameBytes int
	// RatePerSecond and RateBurst shape each connection's token bucket,
	// which every client frame is charged to: a token for a send (or
	// another event), read, typing, auth or invalid frame, an eighth of one
	// for a ping or an ack (see ws_limits.go). Zero means
	// DefaultRatePerSecond and DefaultRateBurst.
	RatePerSecond int
	RateBurst     int
	// Credits is how many sends may await their `accepted` at once. Zero
	// means DefaultCredits.
	Credits int
	// PingInterval is how often the server sends a WebSocket ping. Zero
	// means DefaultPingInterval.
	PingInterval time.Duration
	// IdleTimeout closes a connection (4002) that sent nothing, not even a
	// pong, for this long. Zero means DefaultIdleTimeout. Keep it well above
	// PingInterval.
	IdleTimeout time.Duration
}

func (l *Limits) setDefaults() {
	setInt(&l.MaxBodyBytes, 4096)
	setInt(&l.MaxFrameBytes, 6*l.MaxBodyBytes+1024)
	setInt(&l.RatePerSecond, DefaultRatePerSecond)
	setInt(&l.RateBurst, DefaultRateBurst)
	setInt(&l.Credits, DefaultCredits)
	setDur(&l.PingInterval, DefaultPingInterval)
	setDur(&l.IdleTimeout, DefaultIdleTimeout)
}

// answerSlack is the room kept for answers beyond one per credit: pongs and
// `authed`, which a client's rate limit already bounds.
const answerSlack = 16

// answerRoom is how much of a connection's queue is kept for answers
// (accepted, rejected, pong, authed): messages and signals never take it,
// so only a client that stops reading can fill it. A small configured
// queue still keeps room for MaxPending messages.
func (c *Config) answerRoom() int {
	return max(0, min(c.Limits.Credits+answerSlack, c.OutboundQueue-max(c.Limits.MaxPending, 1)))
}

// MinJWTSecretBytes is the shortest HS256 secret a Server accepts: a
// shorter one can be brute-forced from a single token.
const MinJWTSecretBytes = 16

// Defaults of the HTTP edge's limits (see HTTPLimits). The read timeout
// stays well under 15 s so a silent client is dropped quickly.
const (
	DefaultReadTimeout     = 10 * time.Second
	DefaultMaxHeaderBytes  = 4 << 10
	DefaultMaxConnections  = 10000
	DefaultShutdownTimeout = 10 * time.Second
)

// HTTPLimits bound the HTTP edge: every connection, plain or WebSocket.
// Zero values take the defaults above.
type HTTPLimits struct {
	// ReadTimeout bounds reading one plain HTTP request, header and body:
	// from accept for a connection's first request, from the first byte for
	// a keep-alive connection's next one. A client that sends nothing or
	// trickles its header is closed when it runs out. It does not apply to
	// a WebSocket once upgraded (the idle reaper, Limits.IdleTimeout, is
	// its read timeout). Zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers; larger gets 431.
	// fasthttp reads them into a per-connection buffer that an upgraded
	// WebSocket keeps for its life, so it costs memory per socket. Zero
	// means DefaultMaxHeaderBytes: room for a token at VerifyToken's 2 KiB
	// limit plus the other headers, so an oversized token is a 401, not a 431.
	MaxHeaderBytes int
	// MaxConnections caps the open TCP connections on the listener, plain
	// and WebSocket alike; one more is answered 503 and closed. Keep it
	// below the process's open-file limit. Zero means DefaultMaxConnections.
	MaxConnections int
	// ShutdownTimeout bounds Run's shutdown after its context ends. Zero
	// means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

func (h *HTTPLimits) setDefaults() {
	setDur(&h.ReadTimeout, DefaultReadTimeout)
	setInt(&h.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&h.MaxConnections, DefaultMaxConnections)
	setDur(&h.ShutdownTimeout, DefaultShutdownTimeout)
}

// Defaults of Config.REST, the per-user bucket of /api calls.
const (
	DefaultRESTRatePerSecond = 20
	DefaultRESTBurst         = 40
)

// RateLimit is a token bucket: RatePerSecond tokens a second, up to Burst.
// Config.REST is each user's, shared by all their /api calls (over it a
// call gets 429 with Retry-After); Config.Service replaces it, and
// Limits.RatePerSecond/RateBurst on each WebSocket, for service identities
// (Identity.Service), and `hello` announces it to a service's sessions.
// Zero values take DefaultRESTRatePerSecond and DefaultRESTBurst, or
// DefaultServiceRatePerSecond and DefaultServiceRateBurst.
type RateLimit struct {
	RatePerSecond int
	Burst         int
}

// Defaults of AbuseLimits.
const (
	DefaultAbuseRejects = 50
	DefaultAbuseWindow  = 10 * time.Second
	DefaultAbuseWait    = time.Second
)

// AbuseLimits close a connection that keeps sending refused frames, and
// keep its user waiting before the next upgrade.
type AbuseLimits struct {
	// Rejects refused frames in a row (rejected with any code but
	// overloaded, or typing dropped for the budget), all within Window,
	// close the connection with 4008. Zero means DefaultAbuseRejects and
	// DefaultAbuseWindow.
	Rejects int
	Window  time.Duration
	// Wait is how long a user whose connection was closed for abuse (4008,
	// 4400) waits before the next upgrade (429 until then); it doubles with
	// each such close while the last is recent, up to a minute
	// (ws_penalty.go). Zero means DefaultAbuseWait; negative: no wait.
	Wait time.Duration
}

func (a *AbuseLimits) setDefaults() {
	setInt(&a.Rejects, DefaultAbuseRejects)
	setDur(&a.Window, DefaultAbuseWindow)
	if a.Wait == 0 {
		a.Wait = DefaultAbuseWait
	}
}

// Defaults of Config's own timeouts.
const (
	DefaultWriteTimeout = 10 * time.Second
	DefaultStoreTimeout = 5 * time.Second
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Listen is the address Run listens on. Zero means ":8080".
	Listen string
	// JWTSecret signs and verifies HS256 tokens. Required, at least 16 bytes.
	JWTSecret []byte
	// JWKS adds tokens signed by an identity provider (RS256, ES256, EdDSA).
	// Zero accepts HS256 tokens only.
	JWKS JWKSConfig
	// AllowedOrigins lists the Origin header values a browser WebSocket may
	// come from ("*" allows any). Empty allows only clients that send no
	// Origin (non-browser clients) or whose Origin's host equals the Host
	// header (same origin): the library default of "any origin" would let any
	// web page use a visitor's token, so we never default to it.
	// The same list answers CORS for /api, so a page of a listed origin
	// may call REST too (see corsHandler).
	AllowedOrigins []string
	// Demo is the browser demo app served at / (index.html is the page for
	// a path ending in /), and SDK the JavaScript SDK's ES modules served
	// under /sdk/. Both are read once by New. Nil means not served (404).
	Demo fs.FS
	SDK  fs.FS
	// DevLogin enables POST /api/dev/login, which hands a token for any
	// user name to anyone who asks: for local development and the demo
	// only. False (the default) answers the route 404.
	DevLogin bool
	// Limits are the per-connection limits, announced in `hello`.
	Limits Limits
	// OutboundQueue bounds each connection's queue of frames waiting for its
	// writer. Messages and signals stop short of the room kept for answers
	// (Credits + 16): past it Deliver returns false and a
	// signal is dropped; a full queue closes the connection (4001) when an
	// `accepted`/`rejected` would be lost. Zero means Credits + 16 +
	// 2×MaxPending (120 with the defaults).
	OutboundQueue int
	// WriteTimeout bounds one socket write of queued frames (at most
	// 32 KiB of them, or one larger frame). Zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// StoreTimeout bounds one store call made for a request. Zero means
	// DefaultStoreTimeout.
	StoreTimeout time.Duration
	// HTTP bounds the HTTP edge, REST the /api calls per user, Service
	// both a service identity's WebSockets and its /api calls, Abuse a
	// connection that keeps sending refused frames.
	HTTP    HTTPLimits
	REST    RateLimit
	Service RateLimit
	Abuse   AbuseLimits
	// AdminUsers may call the admin endpoints (GET /api/admin/outbox);
	// everyone else gets 403. Empty means nobody.
	AdminUsers []string

	// Chats stores chats, members, history and read state. Required.
	Chats Chats
	// Ingest accepts sends. Required.
	Ingest Ingester
	// Delivery registers connections for live delivery. Required.
	Delivery Deliverer
	// Ready reports readiness for /readyz (PostgreSQL and NATS reachable).
	// Nil means always ready.
	Ready func(ctx context.Context) error
	// Postgres reports the PostgreSQL timeline and the last failover for
	// /readyz's body; it must be cheap (no I/O). Nil leaves them out.
	Postgres func() PostgresState
	// Outbox returns the admin view of the delivery buffer, served as JSON
	// by GET /api/admin/outbox. Nil means the endpoint answers 404.
	Outbox func(ctx context.Context) (any, error)
	// Registry receives the API metrics and is what /metrics serves. Nil
	// means a private registry (then /metrics shows only the API's metrics).
	Registry *prometheus.Registry
	// Logger receives connection and request failures. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for token checks and rate limits. Nil means time.Now.
	Now func() time.Time

	// Signals carries typing and receipts to every node (and back to this
	// one, through Server.Signal). Nil means they reach only this node's
	// connections.
	Signals Signaler
	// Presence is told when a user's first and last session on this node
	// start and end, and answers GET /api/presence. Nil means presence is
	// off: no frames, and the endpoint answers every user offline.
	Presence Presence
	// Webhooks answers the admin calls on webhook dead letters
	// (GET /api/admin/webhooks/failed and the replays). Nil: they answer 404.
	Webhooks WebhookAdmin
}

// WebhookAdmin is the webhook dead letters as the admin API sees them;
// *webhook.Deliverer satisfies it.
type WebhookAdmin interface {
	// Failed lists dead letters with an id above after, oldest first,
	// only endpoint's unless it is empty.
	Failed(ctx context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error)
	// Replay posts one again; chatd.ErrNotFound for an unknown id, an
	// error wrapping chatd.ErrUnavailable when the endpoint refused it.
	Replay(ctx context.Context, id int64) error
	// ReplayMany replays up to limit of them oldest first, of endpoint or
	// of all; an error wrapping chatd.ErrConflict when endpoint is not
	// configured.
	ReplayMany(ctx context.Context, endpoint string, limit int) (chatd.WebhookReplay, error)
}

func (c *Config) setDefaults() error {
	// An admin that is not a user id matches no token: refused at start
	// rather than found out when its calls are 403.
	for _, u := range c.AdminUsers {
		if err := chatd.CheckUserID("admin user", u); err != nil {
			return fmt.Errorf("api: %w; check --admin-users (CHATD_ADMIN_USERS)", err)
		}
	}
	switch {
	case len(c.JWTSecret) < MinJWTSecretBytes:
		return fmt.Errorf("api: Config.JWTSecret must be at least %d bytes", MinJWTSecretBytes)
	case c.Chats == nil:
		return errors.New("api: Config.Chats is required")
	case c.Ingest == nil:
		return errors.New("api: Config.Ingest is required")
	case c.Delivery == nil:
		return errors.New("api: Config.Delivery is required")
	}
	if c.Listen == "" {
		c.Listen = ":8080"
	}
	c.Limits.setDefaults()
	// Room for every credit's answer plus twice max-pending messages: a
	// healthy client never fills it, and it costs memory per connection.
	setInt(&c.OutboundQueue, c.Limits.Credits+answerSlack+2*c.Limits.MaxPending)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.StoreTimeout, DefaultStoreTimeout)
	c.HTTP.setDefaults()
	setInt(&c.REST.RatePerSecond, DefaultRESTRatePerSecond)
	setInt(&c.REST.Burst, DefaultRESTBurst)
	setInt(&c.Service.RatePerSecond, DefaultServiceRatePerSecond)
	setInt(&c.Service.Burst, DefaultServiceRateBurst)
	c.Abuse.setDefaults()
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

func setInt(p *int, def int) {
	if *p <= 0 {
		*p = def
	}
}

func setDur(p *time.Duration, def time.Duration) {
	if *p <= 0 {
		*p = def
	}
}

// announced is l as `hello` announces it: whole integers, durations in
// milliseconds.
func (l *Limits) announced() *wire.Limits {
	return &wire.Limits{
		LeaseMS:        l.Lease.Milliseconds(),
		MaxAttempts:    int64(l.MaxAttempts),
		MaxPending:     int64(l.MaxPending),
		MaxBodyBytes:   int64(l.MaxBodyBytes),
		MaxFrameBytes:  int64(l.MaxFrameBytes),
		RatePerS:       int64(l.RatePerSecond),
		RateBurst:      int64(l.RateBurst),
		Credits:        int64(l.Credits),
		PingIntervalMS: l.PingInterval.Milliseconds(),
		IdleTimeoutMS:  l.IdleTimeout.Milliseconds(),
	}
}
