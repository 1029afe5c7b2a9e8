package main

import (
	"errors"
	"flag"
	"log/slog"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/webhook"
)

// settings are the parsed flags: the node's Config plus process-level options.
type settings struct {
	node     node.Config
	logLevel string
	logJSON  bool
	// maxProcs caps the Go scheduler's processors (GOMAXPROCS); 0 keeps
	// Go's choice (the GOMAXPROCS variable, else the CPUs available).
	maxProcs int
	// configFile is a YAML file of settings below flags and env (--config).
	configFile string
	// webhookURLs and webhookSecret are --webhook and --webhook-secret;
	// finishSettings turns them, and the config file's webhooks list, into
	// node.Config.Webhook.Endpoints.
	webhookURLs   []string
	webhookSecret string
}

// registerFlags declares every flag of `chatd` and `chatd token`; both read
// the same settings so a token is signed with the secret the server uses.
func registerFlags(fs *flag.FlagSet, s *settings) *envFlags {
	f := &envFlags{fs: fs}
	c := &s.node
	f.String(&c.Listen, "listen", "CHATD_LISTEN", "127.0.0.1:8080", "HTTP and WebSocket address")
	f.String(&c.DataDir, "data-dir", "CHATD_DATA_DIR", "./data", "directory for the embedded PostgreSQL, JetStream store, generated secret and node id")
	f.String(&c.DatabaseURL, "database-url", "CHATD_DATABASE_URL", "", "external PostgreSQL URL; empty starts a managed local PostgreSQL under the data dir")
	f.String(&c.NATSURL, "nats-url", "CHATD_NATS_URL", "", "external NATS URL(s); empty runs NATS in-process")
	f.String(&c.NATSListen, "nats-listen", "CHATD_NATS_LISTEN", "", "open a TCP listener on the embedded NATS (e.g. 127.0.0.1:4222) so the nats CLI can inspect it")
	f.String(&c.NATS.CredsFile, "nats-creds", "CHATD_NATS_CREDS", "", "with --nats-url, a NATS credentials file (user JWT and nkey seed) to authenticate with")
	f.String(&c.NATS.NkeyFile, "nats-nkey", "CHATD_NATS_NKEY", "", "with --nats-url, an nkey seed file to authenticate with")
	f.String(&c.NATS.User, "nats-user", "CHATD_NATS_USER", "", "with --nats-url, the NATS user to authenticate as (with --nats-password)")
	f.String(&c.NATS.Password, "nats-password", "CHATD_NATS_PASSWORD", "", "the --nats-user's password; set it in the environment: a flag is visible to every local user in the process list")
	f.String(&c.NATS.CAFile, "nats-ca", "CHATD_NATS_CA", "", "with --nats-url, a PEM CA file that verifies the NATS server's certificate (turns TLS on)")
	f.String(&c.NATS.CertFile, "nats-cert", "CHATD_NATS_CERT", "", "with --nats-url, this node's PEM client certificate for NATS servers that verify clients (with --nats-key; turns TLS on)")
	f.String(&c.NATS.KeyFile, "nats-key", "CHATD_NATS_KEY", "", "the PEM private key of --nats-cert")
	f.String(&c.StreamName, "stream-name", "CHATD_STREAM_NAME", node.DefaultStreamName, "the delivery stream's JetStream name; deployments sharing a NATS account need different ones (and different --subject-prefix)")
	f.String(&c.SubjectPrefix, "subject-prefix", "CHATD_SUBJECT_PREFIX", node.DefaultSubjectPrefix, "starts every NATS subject and KV bucket chatd uses: <p>.out.<chat> (stream), <p>.sig.<kind>.<chat> (signals), <p>_presence_v2 (bucket)")
	f.String(&c.TLSCertFile, "tls-cert", "CHATD_TLS_CERT", "", "serve HTTP and WebSocket over TLS with this PEM certificate (chain) and --tls-key; both are read again on SIGHUP")
	f.String(&c.TLSKeyFile, "tls-key", "CHATD_TLS_KEY", "", "the PEM private key of --tls-cert")
	f.String(&c.JWTSecret, "jwt-secret", "CHATD_JWT_SECRET", "", "HS256 token secret, at least 16 bytes; empty in embedded mode generates one in the data dir. Prefer setting it in the environment: a flag is visible to every local user in the process list")
	f.String(&c.JWKS.URL, "jwks-url", "CHATD_JWKS_URL", "", "also accept RS256, ES256 and EdDSA tokens signed by a key (chosen by kid) of the JWK Set at this URL; fetched at start (the start fails if it is not a valid set), hourly and on an unknown kid. Empty: HS256 tokens only")
	f.String(&c.JWKS.Issuer, "jwt-issuer", "CHATD_JWT_ISSUER", "", "with --jwks-url, the iss a provider token must carry; empty: not checked")
	f.String(&c.JWKS.Audience, "jwt-audience", "CHATD_JWT_AUDIENCE", "", "with --jwks-url, a value a provider token's aud must hold; empty: not checked")
	f.String(&c.JWKS.UserClaim, "jwt-user-claim", "CHATD_JWT_USER_CLAIM", api.DefaultJWTUserClaim, "with --jwks-url, the provider token claim holding the user id (1-64 of [A-Za-z0-9_-]); chatd's HS256 tokens always use sub")
	f.String(&c.JWKS.UserClaim, "user-claim", "CHATD_JWT_USER_CLAIM", api.DefaultJWTUserClaim, "alias of --jwt-user-claim")
	f.String(&c.NodeID, "node-id", "CHATD_NODE_ID", "", "this node's name (its consumer is push-<id>); empty generates one in the data dir")
	f.List(&c.AllowedOrigins, "allowed-origins", "CHATD_ALLOWED_ORIGINS", "browser Origins allowed on /ws; empty allows only non-browser and same-origin clients; * allows any")
	f.Bool(&c.DevLogin, "dev-login", "CHATD_DEV_LOGIN", false, "DEVELOPMENT ONLY: POST /api/dev/login hands a token for any user name to anyone who can reach the port (the demo's sign-in by name); off: 404")
	f.List(&c.AdminUsers, "admin-users", "CHATD_ADMIN_USERS", "users whose tokens may call /api/admin/ (the outbox view, webhook dead letters and their replay)")
	f.Duration(&c.HTTPReadTimeout, "http-read-timeout", "CHATD_HTTP_READ_TIMEOUT", api.DefaultReadTimeout, "close a connection whose HTTP request (header and body) is not read in full within this; WebSockets are exempt once upgraded")
	f.Int(&c.MaxHeaderBytes, "max-header-bytes", "CHATD_MAX_HEADER_BYTES", api.DefaultMaxHeaderBytes, "largest request line plus headers; larger gets 431 (each WebSocket keeps a buffer this size)")
	f.Int(&c.MaxConnections, "max-connections", "CHATD_MAX_CONNECTIONS", api.DefaultMaxConnections, "open HTTP and WebSocket connections; one more is answered 503 (keep below the open-file limit)")
	f.Duration(&c.ShutdownDelay, "shutdown-delay", "CHATD_SHUTDOWN_DELAY", 0, "on SIGTERM, answer /readyz 503 and keep serving this long before draining, so a load balancer stops sending new sockets first")
	f.String(&c.DebugListen, "debug-listen", "CHATD_DEBUG_LISTEN", "", "serve Go's profiler (/debug/pprof/, without cmdline) on this address, e.g. 127.0.0.1:6060; keep it private")

	f.Int(&c.QueueSize, "queue-size", "CHATD_QUEUE_SIZE", 8000, "sends held from submit to the end of their commit; beyond it a send is rejected overloaded")
	f.Int(&c.BatchSize, "batch-size", "CHATD_BATCH_SIZE", 128, "most messages per group-commit transaction")
	f.Duration(&c.BatchDelay, "batch-delay", "CHATD_BATCH_DELAY", 10_000_000, "how long a batch waits to fill; longer costs PostgreSQL less per message, and every send up to this long")
	f.Int(&c.Workers, "commit-workers", "CHATD_COMMIT_WORKERS", 4, "concurrent group-commit transactions")
	f.Int(&c.ReadBatchSize, "read-batch-size", "CHATD_READ_BATCH_SIZE", 64, "read receipts per read-state transaction (group commit)")
	f.Duration(&c.ReadBatchDelay, "read-batch-delay", "CHATD_READ_BATCH_DELAY", 10_000_000, "how long a read-state batch waits to fill")
	f.Int(&c.MaxBodyBytes, "max-body-bytes", "CHATD_MAX_BODY_BYTES", 4096, "largest message body")
	f.Int(&c.MaxGroupMembers, "max-group-members", "CHATD_MAX_GROUP_MEMBERS", node.DefaultMaxGroupMembers, "most members a group may have (checked on create and add); every message carries its members to the delivery stream")

	f.Duration(&c.Lease, "lease", "CHATD_LEASE", 10_000_000_000, "delivery lease (AckWait): keep far above p99.9 delivery-to-ack latency")
	f.Int(&c.MaxAttempts, "max-attempts", "CHATD_MAX_ATTEMPTS", 3, "delivery attempts before a non-acking client is abandoned (close 4000)")
	f.Int(&c.MaxPending, "max-pending", "CHATD_MAX_PENDING", 20, "un-acked messages per connection before it is closed overloaded (4001)")
	f.Duration(&c.Grace, "reconnect-grace", "CHATD_RECONNECT_GRACE", 0, "spare a just-connected client from the attempts reaper for this long")
	f.Duration(&c.NATSUnreachable, "nats-unreachable", "CHATD_NATS_UNREACHABLE", node.DefaultNATSUnreachable,
		"after NATS is unreachable this long, turn not ready and close sessions with 1001 so clients move to a healthy node")
	f.Duration(&c.ConsumerCheck, "consumer-check", "CHATD_CONSUMER_CHECK", 1_000_000_000,
		"how often the node checks that its JetStream consumer exists (recreated if gone)")

	f.Duration(&c.PresenceTTL, "presence-ttl", "CHATD_PRESENCE_TTL", node.DefaultPresenceTTL,
		"a node's presence heartbeat expires this long after its last refresh: how soon a dead node's users go offline")
	f.Duration(&c.PresenceRefresh, "presence-refresh", "CHATD_PRESENCE_REFRESH", node.DefaultPresenceRefresh,
		"how often a node rewrites its presence heartbeat; under half of --presence-ttl")
	f.Int(&c.PresenceAudience, "presence-audience", "CHATD_PRESENCE_AUDIENCE", node.DefaultPresenceAudience,
		"the largest chat whose members hear of a member going online or offline")

	f.Int(&c.RatePerSecond, "rate", "CHATD_RATE", 50, "tokens per second per connection; every WebSocket frame costs one, a ping or ack an eighth (token bucket rate)")
	f.Int(&c.RateBurst, "rate-burst", "CHATD_RATE_BURST", 100, "token bucket burst per connection")
	f.Int(&c.Credits, "credits", "CHATD_CREDITS", 64, "sends a connection may have awaiting accepted")
	f.Duration(&c.PingInterval, "ping-interval", "CHATD_PING_INTERVAL", 10_000_000_000, "server WebSocket ping interval")
	f.Duration(&c.IdleTimeout, "idle-timeout", "CHATD_IDLE_TIMEOUT", 30_000_000_000, "close a silent connection (4002) after this long")

	f.Int(&c.StreamReplicas, "stream-replicas", "CHATD_STREAM_REPLICAS", 1, "replicas of the delivery stream (3 on a NATS cluster)")
	f.Int64(&c.StreamMaxBytes, "stream-max-bytes", "CHATD_STREAM_MAX_BYTES", 1<<30, "delivery stream size limit; beyond it the PostgreSQL outbox absorbs the backlog")
	f.Duration(&c.StreamMaxAge, "stream-max-age", "CHATD_STREAM_MAX_AGE", 26*3_600_000_000_000, "delivery stream MaxAge: a disk backstop only, keep it far below --history-retention")
	f.Duration(&c.StreamDuplicates, "stream-duplicates", "CHATD_STREAM_DUPLICATES", node.DefaultStreamDuplicates, "the delivery stream's duplicate window: a relay's republish within it is dropped; the server keeps every message id stored within it in memory (at 2,000 msg/s, 2m cost 40 MiB more RSS than 30s)")
	f.Duration(&c.GCInterval, "gc-interval", "CHATD_GC_INTERVAL", 5_000_000_000, "how often the stream is purged below the Tetris floor")
	f.String(&c.Settle, "settle", "CHATD_SETTLE", node.SettleAuto, "auto: while this node is provably alone (embedded NATS, and no --nats-listen unless the database is the managed one) and no other consumer reads the delivery stream, a message every local connection acked is deleted from the outbox without entering the stream; off: every message enters the stream (for integrations, or to see each one with the nats CLI)")
	f.Duration(&c.SettleWait, "settle-wait", "CHATD_SETTLE_WAIT", node.DefaultSettleWait, "while settling (--settle): how long the relay keeps a new message out of the delivery stream while its recipients' connections ack it. Shorter than --lease. Negative: settling off")
	f.Duration(&c.RelayStepDownAfter, "relay-step-down-after", "CHATD_RELAY_STEP_DOWN_AFTER", 5_000_000_000, "give the relay up to another node after publishing to NATS has failed this long")
	f.Duration(&c.HistoryRetention, "history-retention", "CHATD_HISTORY_RETENTION", 0, "delete messages older than this, e.g. 2160h for 90 days; 0 keeps history forever (a chat may set its own)")
	f.Repeated(&s.webhookURLs, "webhook", "CHATD_WEBHOOK", "POST every event (message, edit, delete, reaction) to this URL, signed as Standard Webhooks says; repeat for more endpoints. Per-endpoint secrets and event filters: the config file's webhooks list (docs/integrations.md). Turns settling off")
	f.String(&s.webhookSecret, "webhook-secret", "CHATD_WEBHOOK_SECRET", "", "whsec_ and the base64 of the key that signs webhook requests (whsec_$(openssl rand -base64 32)); set it in the environment: a flag is visible in the process list")
	f.Int(&c.Webhook.MaxAttempts, "webhook-max-attempts", "CHATD_WEBHOOK_MAX_ATTEMPTS", webhook.DefaultMaxAttempts, "posts of one event before it is set aside as a dead letter (GET /api/admin/webhooks/failed); backoff doubles from 1s to 1m between them")
	f.Duration(&c.Webhook.Timeout, "webhook-timeout", "CHATD_WEBHOOK_TIMEOUT", webhook.DefaultTimeout, "how long one webhook post may take before it counts as failed")
	f.Int(&c.Webhook.Workers, "webhook-workers", "CHATD_WEBHOOK_WORKERS", webhook.DefaultWorkers, "chats posted to each endpoint at once (each chat's events stay in order)")

	f.String(&s.configFile, "config", "CHATD_CONFIG", "", "read settings from this YAML file whose keys are the flag names (listen: 127.0.0.1:8080); a flag or its environment variable wins over the file")
	f.String(&s.logLevel, "log-level", "CHATD_LOG_LEVEL", "info", "debug, info, warn or error")
	f.Bool(&s.logJSON, "log-json", "CHATD_LOG_JSON", false, "log JSON instead of text")
	f.Int(&s.maxProcs, "max-procs", "CHATD_MAX_PROCS", 0, "most CPUs that run chatd's Go code at once (GOMAXPROCS); 0: Go's choice, every CPU. 1 on a 2-core box shared with PostgreSQL costs chatd 9-17% less CPU per message and its p99 more (BENCHMARKS.md)")
	return f
}

// finishSettings completes s after fs.Parse: the flags are set, their
// environment variables were their defaults; it reports a bad env value
// and applies --config's file beneath both.
func finishSettings(fs *flag.FlagSet, f *envFlags, s *settings) error {
	if err := errors.Join(f.errs...); err != nil {
		return err
	}
	var fromFile []fileWebhook
	if s.configFile != "" {
		if err := applyConfigFile(fs, f, s.configFile); err != nil {
			return err
		}
		var err error
		if fromFile, err = webhooksFromFile(s.configFile); err != nil {
			return err
		}
	}
	return setWebhooks(s, fromFile)
}

func newLogger(s *settings) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s.logLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if s.logJSON {
		return slog.New(slog.NewJSONHandler(stderr(), opts))
	}
	return slog.New(slog.NewTextHandler(stderr(), opts))
}
