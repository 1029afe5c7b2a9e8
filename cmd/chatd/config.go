package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/chatd/chatd/internal/gcfloor"
	"github.com/chatd/chatd/internal/timerslack"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
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
	// timerSlack is how late the kernel may fire this process's timers
	// (internal/timerslack); 0 keeps the slack chatd was started with.
	timerSlack time.Duration
	// sysmonPoll keeps Go's monitor thread from its deep sleep
	// (internal/reexec, MonitorGODEBUG).
	sysmonPoll bool
	// heapFloor is the heap goal Go's collector is held to at least
	// (internal/gcfloor); 0 leaves GOGC alone.
	heapFloor int64
	// configFile is a YAML file of settings below flags and env (--config).
	configFile string
	// webhookURLs and webhookSecret are --webhook and --webhook-secret;
	// finishSettings turns them, and the config file's webhooks list, into
	// node.Config.Webhook.Endpoints.
	webhookURLs   []string
	webhookSecret string
	// version asks for the build's version instead of a start (--version).
	version bool
}

//go:generate go test . -count=1 -run TestFlagTables -update

// registerFlags declares every flag of `chatd`. A flag binds straight into
// the field of the component's Config it sets (inside node.Config), with the
// component's exported default. To add one, give the component's Config the
// field and its default, add one registration (its group, short --help line
// and long doc) to the declare functions below, then run `go generate
// ./cmd/chatd`: it rewrites the flag tables in README.md and
// docs/architecture.md, which a test keeps equal.
func registerFlags(fs *flag.FlagSet, s *settings) *envFlags {
	f := &envFlags{fs: fs}
	declareFlags(f, s)
	return f
}

// declareFlags declares every setting, each with its group, a short line
// for --help and the detail for the docs' tables.
func declareFlags(f *envFlags, s *settings) {
	c := &s.node
	declareGeneral(f, s)
	declareListening(f, c)
	declareStorage(f, c)
	declareNATS(f, c)
	declareIdentity(f, c)
	declareLimits(f, c)
	declareDelivery(f, c)
	declareWebhooks(f, s)
	declareCluster(f, c)
	declareObservability(f, s)
}

func declareGeneral(f *envFlags, s *settings) {
	f.String(&s.configFile, "config", "CHATD_CONFIG", "", doc{group: groupGeneral,
		short: "YAML file of settings keyed by flag name",
		long:  "a YAML file of settings whose keys are the flag names (`listen: 127.0.0.1:8080`); a flag or its environment variable wins over the file"})
	f.Bool(&s.version, "version", "", false, doc{group: groupGeneral,
		short: "print the version and exit",
		long:  "print the module version and VCS revision, and exit"})
	f.Int(&s.maxProcs, "max-procs", "CHATD_MAX_PROCS", 0, doc{group: groupGeneral, unset: "CPUs shared",
		short: "CPUs running Go at once (GOMAXPROCS)",
		long:  "most CPUs that run chatd's Go code at once (GOMAXPROCS). `0`: Go's choice (every CPU, or a container's CPU limit), divided among the chatd processes running on the same CPUs of this machine, counted again every 2 s and logged when it changes (docs/cluster.md, \"Nodes sharing a machine\"); the GOMAXPROCS variable turns the division off as a value here does. `1` for a lone node on a 2-core box shared with PostgreSQL saves chatd CPU per message and costs p99 at high rates (BENCHMARKS.md)"})
	f.Duration(&s.timerSlack, "timer-slack", "CHATD_TIMER_SLACK", timerslack.DefaultSlack, doc{group: groupGeneral, unset: "the inherited slack",
		short: "how late the kernel may fire timers",
		long:  "how late the kernel may fire chatd's timers (Linux timer slack, set by executing chatd again at start), so that it merges their wake-ups: pairs at 2,000 msg/s on one node cost 13% less chatd CPU a message with `1ms`, and a lone message waits up to this much longer (docs/benchmarks-log.md, \"The runtime's monitor thread, and timer slack\"). The managed PostgreSQL inherits it. `0`: keep the slack chatd was started with"})
	f.Bool(&s.sysmonPoll, "sysmon-poll", "CHATD_SYSMON_POLL", true, doc{group: groupGeneral,
		short: "Go's monitor thread polls while idle",
		long:  "keep Go's runtime monitor thread (sysmon) polling, every 10 ms at most, while chatd idles, rather than in its deep sleep, which every wake-up of chatd ends with a system call and 20 µs checks (GODEBUG=schedtrace=2147483647, set by executing chatd again at start; Go has no other setting for it): pairs at 2,000 msg/s cost a three-node cluster on one box a fifth less chatd CPU a message, and one node 5–12% less (docs/benchmarks-log.md, \"The monitor thread's deep sleep\"). With it, on a machine up for more than 24.8 days, Go writes one line starting `SCHED` to stderr at start and every 24.8 days. Off, or a GODEBUG that sets schedtrace: Go's default"})
	f.Int64(&s.heapFloor, "heap-floor-bytes", "CHATD_HEAP_FLOOR_BYTES", gcfloor.DefaultFloor, doc{group: groupGeneral,
		short: "Go heap reached before collecting garbage",
		long:  "bytes the Go heap may reach before the garbage collector runs: while the live heap is under half of this, GOGC is raised (to 1000 at most) so the collector waits until the heap reaches it (pairs at 4,000 msg/s: 75 against 82 µs of chatd CPU per message, peak RSS 110 against 62 MiB; docs/benchmarks-log.md, \"A floor under the GC's heap goal\"); above that, Go's default GOGC=100. `0`: off. Ignored when the GOGC variable is set"})
}

func declareListening(f *envFlags, c *node.Config) {
	f.String(&c.Listen, "listen", "CHATD_LISTEN", node.DefaultListen, doc{group: groupListening,
		short: "HTTP and WebSocket address"})
	f.String(&c.TLSCertFile, "tls-cert", "CHATD_TLS_CERT", "", doc{group: groupListening, unset: "none",
		short: "serve HTTPS/WSS with this PEM cert",
		long:  "serve HTTPS and WSS with this PEM certificate (chain) and `--tls-key`; both files are read again on SIGHUP"})
	f.String(&c.TLSKeyFile, "tls-key", "CHATD_TLS_KEY", "", doc{group: groupListening,
		short: "private key of --tls-cert",
		long:  "the PEM private key of `--tls-cert`"})
	f.List(&c.API.AllowedOrigins, "allowed-origins", "CHATD_ALLOWED_ORIGINS", doc{group: groupListening, unset: "same-origin",
		short: "browser Origins for /ws; * for any",
		long:  "browser origins (comma-separated) allowed on `/ws` and answered CORS on `/api`; empty allows only same-origin and non-browser clients (no Origin); `*` allows any"})
	f.Duration(&c.API.HTTP.ReadTimeout, "http-read-timeout", "CHATD_HTTP_READ_TIMEOUT", api.DefaultReadTimeout, doc{group: groupListening,
		short: "time to read a whole HTTP request",
		long:  "close a connection whose HTTP request (header and body) is not read in full within this; WebSockets are exempt once upgraded"})
	f.Duration(&c.ShutdownDelay, "shutdown-delay", "CHATD_SHUTDOWN_DELAY", 0, doc{group: groupListening, unset: "none",
		short: "stay up unready this long on SIGTERM",
		long:  "on SIGTERM, answer `/readyz` 503 and keep serving this long before draining, so a load balancer stops sending new sockets first"})
}

func declareStorage(f *envFlags, c *node.Config) {
	f.String(&c.DataDir, "data-dir", "CHATD_DATA_DIR", "./data", doc{group: groupStorage,
		short: "embedded PostgreSQL, NATS, secrets",
		long:  "directory for the managed PostgreSQL, the JetStream store, the generated secret, node id and NATS nkey"})
	f.String(&c.DatabaseURL, "database-url", "CHATD_DATABASE_URL", "", doc{group: groupStorage, unset: "chatd runs one",
		short: "external PostgreSQL URL",
		long:  "external PostgreSQL URL; empty starts a managed local PostgreSQL under the data dir"})
	f.Int(&c.Store.MaxConns, "database-pool", "CHATD_DATABASE_POOL", store.DefaultMaxConns, doc{group: groupStorage,
		short: "size of the PostgreSQL pool",
		long:  "most pooled PostgreSQL connections this node opens (its LISTEN connection and the relay's and webhooks' locks take a few more); nodes sharing a database must stay, together, under its `max_connections`. Overrides a `pool_max_conns` in `--database-url`"})
	f.Duration(&c.HistoryRetention, "history-retention", "CHATD_HISTORY_RETENTION", 0, doc{group: groupStorage, unset: "keep forever",
		short: "delete messages older than this",
		long:  "delete messages older than this (e.g. `2160h`, 90 days); history is kept forever unless you set it. It must be longer than `--stream-max-age`, a chat's own retention is never shorter than the stream's max age, and a message not yet relayed is never pruned. Messages past it are deleted as chatd starts and then hourly"})
	f.Int(&c.Ingest.QueueSize, "queue-size", "CHATD_QUEUE_SIZE", ingest.DefaultQueueSize, doc{group: groupStorage,
		short: "unsaved sends held; more are refused",
		long:  "sends held from submit to the end of their commit; beyond it a send is rejected `overloaded`"})
	f.Int(&c.Ingest.BatchSize, "batch-size", "CHATD_BATCH_SIZE", ingest.DefaultBatchSize, doc{group: groupStorage,
		short: "most messages saved per transaction",
		long:  "most messages per group-commit transaction"})
	f.Duration(&c.Ingest.BatchDelay, "batch-delay", "CHATD_BATCH_DELAY", ingest.DefaultBatchDelay, doc{group: groupStorage,
		short: "how long a batch waits to fill",
		long:  "how long a group-commit batch waits to fill; longer costs PostgreSQL less per message, and every send up to this long"})
	f.Int(&c.Ingest.Workers, "commit-workers", "CHATD_COMMIT_WORKERS", ingest.DefaultWorkers, doc{group: groupStorage,
		short: "transactions saving at once",
		long:  "concurrent group-commit transactions"})
	f.Int(&c.Reads.BatchSize, "read-batch-size", "CHATD_READ_BATCH_SIZE", ingest.DefaultReadBatchSize, doc{group: groupStorage,
		short: "most read receipts per transaction",
		long:  "read receipts per read-state transaction (group commit of read receipts)"})
	f.Duration(&c.Reads.BatchDelay, "read-batch-delay", "CHATD_READ_BATCH_DELAY", ingest.DefaultReadBatchDelay, doc{group: groupStorage,
		short: "how long read receipts wait to batch"})
}

func declareNATS(f *envFlags, c *node.Config) {
	f.String(&c.NATSURL, "nats-url", "CHATD_NATS_URL", "", doc{group: groupNATS, unset: "in-process",
		short: "external NATS URLs, comma-separated",
		long:  "external NATS URL(s), comma-separated (reconnect wait 250 ms, unlimited); empty runs NATS in-process"})
	f.String(&c.NATSListen, "nats-listen", "CHATD_NATS_LISTEN", "", doc{group: groupNATS,
		short: "TCP address for the embedded NATS",
		long:  "open a TCP listener on the embedded NATS (e.g. `127.0.0.1:4222`) so the `nats` CLI can inspect it; clients need `--nkey <data-dir>/nats-user.nk`"})
	f.String(&c.NATS.CredsFile, "nats-creds", "CHATD_NATS_CREDS", "", doc{group: groupNATS,
		short: "credentials file to log in with",
		long:  "with `--nats-url`, a NATS credentials file (user JWT and nkey seed, operator mode) to authenticate with"})
	f.String(&c.NATS.NkeyFile, "nats-nkey", "CHATD_NATS_NKEY", "", doc{group: groupNATS,
		short: "nkey seed file to log in with",
		long:  "with `--nats-url`, an nkey seed file to authenticate with"})
	f.String(&c.NATS.User, "nats-user", "CHATD_NATS_USER", "", doc{group: groupNATS,
		short: "user to log in as",
		long:  "with `--nats-url`, the NATS user to authenticate as (with `--nats-password`)"})
	f.String(&c.NATS.Password, "nats-password", "CHATD_NATS_PASSWORD", "", doc{group: groupNATS,
		short: "password; set by env: flags show in ps",
		long:  "the `--nats-user`'s password; set it with the environment variable: a flag is visible to every local user in the process list (`ps`)"})
	f.String(&c.NATS.CAFile, "nats-ca", "CHATD_NATS_CA", "", doc{group: groupNATS, unset: "system roots",
		short: "CA file for the server (turns TLS on)",
		long:  "with `--nats-url`, a PEM CA file that verifies the NATS server's certificate (turns TLS on); empty: the system roots"})
	f.String(&c.NATS.CertFile, "nats-cert", "CHATD_NATS_CERT", "", doc{group: groupNATS,
		short: "client certificate (turns TLS on)",
		long:  "with `--nats-url`, this node's PEM client certificate for NATS servers that verify clients (with `--nats-key`; turns TLS on)"})
	f.String(&c.NATS.KeyFile, "nats-key", "CHATD_NATS_KEY", "", doc{group: groupNATS,
		short: "private key of --nats-cert",
		long:  "the PEM private key of `--nats-cert`"})
	f.Duration(&c.Push.Unreachable, "nats-unreachable", "CHATD_NATS_UNREACHABLE", push.DefaultUnreachable, doc{group: groupNATS,
		short: "after NATS is gone this long: unready",
		long:  "after NATS is unreachable this long, turn not ready and close sessions with 1001 (until it is back), so clients move to a healthy node"})
	f.String(&c.Stream.Name, "stream-name", "CHATD_STREAM_NAME", stream.DefaultName, doc{group: groupNATS,
		short: "stream name; unique per NATS account",
		long:  "the delivery stream's JetStream name; deployments sharing a NATS account need different ones, and a different `--subject-prefix` (docs/operations.md, \"NATS and TLS options\")"})
	f.String(&c.SubjectPrefix, "subject-prefix", "CHATD_SUBJECT_PREFIX", node.DefaultSubjectPrefix, doc{group: groupNATS,
		short: "prefix of every subject and bucket",
		long:  "starts every NATS subject and KV bucket chatd uses: `<p>.out.<chat>` (stream), `<p>.sig.<kind>.<chat>` (signals), `<p>_presence_v2` (bucket)"})
}

func declareIdentity(f *envFlags, c *node.Config) {
	f.String(&c.JWTSecret, "jwt-secret", "CHATD_JWT_SECRET", "", doc{group: groupIdentity, unset: "generated",
		short: "token secret, 16+ bytes; use the env var",
		long:  "HS256 token secret, at least 16 bytes, the same on every node; empty in embedded mode generates one in the data dir. Set it with the environment variable: a flag is visible to every local user in the process list (`ps`)"})
	f.String(&c.API.JWKS.URL, "jwks-url", "CHATD_JWKS_URL", "", doc{group: groupIdentity, unset: "none",
		short: "also accept tokens signed by this JWK Set",
		long:  "also accept RS256, ES256 and EdDSA tokens signed by a key (chosen by `kid`) of the JWK Set at this URL; fetched at start (the start fails if it is not a valid set), hourly and on an unknown `kid` (at most every 30 s). Empty: HS256 tokens only"})
	f.String(&c.API.JWKS.Issuer, "jwt-issuer", "CHATD_JWT_ISSUER", "", doc{group: groupIdentity, unset: "not checked",
		short: "the iss a --jwks-url token must carry",
		long:  "with `--jwks-url`, the `iss` a provider token must carry"})
	f.String(&c.API.JWKS.Audience, "jwt-audience", "CHATD_JWT_AUDIENCE", "", doc{group: groupIdentity, unset: "not checked",
		short: "a value a --jwks-url token's aud must hold",
		long:  "with `--jwks-url`, a value a provider token's `aud` must hold"})
	f.String(&c.API.JWKS.UserClaim, "jwt-user-claim", "CHATD_JWT_USER_CLAIM", api.DefaultJWTUserClaim, doc{group: groupIdentity,
		short: "--jwks-url token claim holding the user id",
		long:  "with `--jwks-url`, the provider token claim holding the user id (1-64 of `[A-Za-z0-9_-]`, the rule for `sub`); chatd's HS256 tokens always use `sub`"})
	f.String(&c.API.JWKS.UserClaim, "user-claim", "CHATD_JWT_USER_CLAIM", api.DefaultJWTUserClaim, doc{group: groupIdentity,
		short: "alias of --jwt-user-claim",
		long:  "alias of `--jwt-user-claim`"})
	f.String(&c.API.JWKS.ServiceClaim, "service-claim", "CHATD_SERVICE_CLAIM", api.DefaultJWTServiceClaim, doc{group: groupIdentity,
		short: "--jwks-url token claim marking a service",
		long:  "with `--jwks-url`, the provider token claim that marks a service identity when it is the boolean `true` (a bot, an app backend: `--service-rate` applies); chatd's HS256 tokens always use `svc`"})
	f.List(&c.API.AdminUsers, "admin-users", "CHATD_ADMIN_USERS", doc{group: groupIdentity,
		short: "users who may call /api/admin/",
		long:  "users or services (comma-separated) whose tokens may call `/api/admin/`: the outbox view, webhook dead letters and their replay, and the chat calls of docs/integrations.md \"Bots and services\""})
	f.Bool(&c.API.DevLogin, "dev-login", "CHATD_DEV_LOGIN", false, doc{group: groupIdentity,
		short: "DEV ONLY: anyone gets any user's token",
		long:  "**development only**: `POST /api/dev/login {\"user\":\"alice\"}` hands a token for any user name to anyone who can reach the port (the demo's sign-in by name); `make run` turns it on; off, the route is 404"})
}

func declareLimits(f *envFlags, c *node.Config) {
	f.Int(&c.API.HTTP.MaxConnections, "max-connections", "CHATD_MAX_CONNECTIONS", 0, doc{group: groupLimits, unset: "auto",
		short: "open connections; more get 503",
		long:  "open HTTP and WebSocket connections; one more is answered 503 and closed. 0: the open-file limit less 1,024 descriptors kept for PostgreSQL, NATS and files. At start chatd raises its soft open-file limit to the hard one and logs it"})
	f.Int(&c.API.HTTP.MaxHeaderBytes, "max-header-bytes", "CHATD_MAX_HEADER_BYTES", api.DefaultMaxHeaderBytes, doc{group: groupLimits,
		short: "request line plus headers; more get 431",
		long:  "largest request line plus headers; larger gets 431 (each WebSocket keeps a buffer this size)"})
	f.Int(&c.Ingest.MaxBodyBytes, "max-body-bytes", "CHATD_MAX_BODY_BYTES", ingest.DefaultMaxBodyBytes, doc{group: groupLimits,
		short: "largest message body",
		long:  "largest message body; chatd refuses to start if a 2-member chat's worst-case message (every body byte, and the largest `meta`, JSON-escaped to 6) would not fit NATS's max payload"})
	f.Int(&c.Store.MaxGroupMembers, "max-group-members", "CHATD_MAX_GROUP_MEMBERS", store.DefaultMaxGroupMembers, doc{group: groupLimits,
		short: "most members a group may have",
		long:  "most members a group may have, checked on create and add (400 `too_many_members`); it bounds the envelope, since every message carries its members to the delivery stream"})
	f.Int(&c.API.Limits.RatePerSecond, "rate", "CHATD_RATE", api.DefaultRatePerSecond, doc{group: groupLimits,
		short: "frames per second per connection",
		long:  "tokens per second per connection: every WebSocket frame costs one, a ping or ack an eighth (token bucket rate; docs/protocol.md, \"WebSocket details\")"})
	f.Int(&c.API.Limits.RateBurst, "rate-burst", "CHATD_RATE_BURST", api.DefaultRateBurst, doc{group: groupLimits,
		short: "burst above --rate per connection",
		long:  "token bucket burst per connection"})
	f.Int(&c.API.Service.RatePerSecond, "service-rate", "CHATD_SERVICE_RATE", api.DefaultServiceRatePerSecond, doc{group: groupLimits,
		short: "--rate and REST calls/s for a service",
		long:  "tokens per second of a service identity (`chatd token --service`, docs/integrations.md \"Bots and services\"), replacing `--rate` on each of its WebSockets and the per-user REST budget on its calls"})
	f.Int(&c.API.Service.Burst, "service-burst", "CHATD_SERVICE_BURST", api.DefaultServiceRateBurst, doc{group: groupLimits,
		short: "burst above --service-rate",
		long:  "token bucket burst of a service identity, per WebSocket and for its REST calls"})
	f.Int(&c.API.Limits.Credits, "credits", "CHATD_CREDITS", api.DefaultCredits, doc{group: groupLimits,
		short: "sends awaiting accepted per connection",
		long:  "sends a connection may have awaiting `accepted`"})
	f.Duration(&c.API.Limits.PingInterval, "ping-interval", "CHATD_PING_INTERVAL", api.DefaultPingInterval, doc{group: groupLimits,
		short: "how often each WebSocket is pinged",
		long:  "server WebSocket ping interval (with `--idle-timeout`, the idle reaper)"})
	f.Duration(&c.API.Limits.IdleTimeout, "idle-timeout", "CHATD_IDLE_TIMEOUT", api.DefaultIdleTimeout, doc{group: groupLimits,
		short: "close a connection silent this long",
		long:  "close a silent connection (4002) after this long"})
}

func declareDelivery(f *envFlags, c *node.Config) {
	f.Duration(&c.Push.Lease, "lease", "CHATD_LEASE", push.DefaultLease, doc{group: groupDelivery,
		short: "time to ack before a message is resent",
		long:  "delivery lease (JetStream AckWait); keep it far above the slowest delivery-to-ack time you expect"})
	f.Int(&c.Push.MaxAttempts, "max-attempts", "CHATD_MAX_ATTEMPTS", push.DefaultMaxAttempts, doc{group: groupDelivery,
		short: "sends before a non-acking client is closed",
		long:  "delivery attempts before a non-acking client is abandoned (close 4000); JetStream's MaxDeliver is this + 1"})
	f.Int(&c.Push.MaxPending, "max-pending", "CHATD_MAX_PENDING", push.DefaultMaxPending, doc{group: groupDelivery,
		short: "un-acked sends per client before pacing",
		long:  "un-acked messages per connection; more are held for it and sent as it acks, and over 10 × this held it is closed overloaded (4001)"})
	f.Duration(&c.Push.Grace, "reconnect-grace", "CHATD_RECONNECT_GRACE", 0, doc{group: groupDelivery, unset: "none",
		short: "spare new connections from --max-attempts",
		long:  "spare a just-connected client from the attempts reaper for this long; counter-productive under load (BENCHMARKS.md)"})
	f.String(&c.Settle, "settle", "CHATD_SETTLE", node.SettleAuto, doc{group: groupDelivery,
		short: "auto: skip the stream for acked messages; off",
		long:  "`auto`: a message every recipient connection acked is deleted from the outbox without entering the stream, while no consumer but the nodes' reads the delivery stream: alone on the embedded NATS, or across nodes where others can join (`--nats-url`, or `--nats-listen` with `--database-url`), each node reporting what its connections acked to the node that committed it; not there with `--forward-commits off` or webhooks. `off`: every message enters the stream (for integrations, or to see each one with the `nats` CLI). See docs/operations.md, \"The delivery stream\""})
	f.Duration(&c.Relay.SettleWait, "settle-wait", "CHATD_SETTLE_WAIT", stream.DefaultSettleWait, doc{group: groupDelivery,
		short: "how long a message waits for its acks",
		long:  "while settling (`--settle`): how long the relay keeps a new message out of the delivery stream while its recipients' connections ack it; one still unacked is published and leased as usual, so it must be shorter than `--lease`. Across nodes, each node gathers its reports for a tenth of it (20 ms at most). Negative: settling off", negativeMeans: true})
	f.String(&c.Forward, "forward-commits", "CHATD_FORWARD_COMMITS", node.ForwardOn, doc{group: groupDelivery,
		short: "on: commit on the relay's node; off",
		long:  "`on`: a node whose relay stands by sends each batch of sends to the node whose relay leads, which commits it with its own: fewer, larger transactions, no chat locked by two nodes, every commit handed to the relay in memory; a batch that node does not answer within 2 s is committed here. `off`: every node commits its own batches. See docs/architecture.md, \"Forwarded commits\""})
	f.Int(&c.Stream.Replicas, "stream-replicas", "CHATD_STREAM_REPLICAS", stream.DefaultReplicas, doc{group: groupDelivery,
		short: "stream copies (3 on a NATS cluster)",
		long:  "replicas of the delivery stream (3 on a NATS cluster)"})
	f.Int64(&c.Stream.MaxBytes, "stream-max-bytes", "CHATD_STREAM_MAX_BYTES", stream.DefaultMaxBytes, doc{group: groupDelivery,
		short: "stream size; PostgreSQL holds the rest",
		long:  "delivery stream size limit; beyond it the PostgreSQL outbox absorbs the backlog"})
	f.Duration(&c.Stream.MaxAge, "stream-max-age", "CHATD_STREAM_MAX_AGE", stream.DefaultMaxAge, doc{group: groupDelivery,
		short: "oldest message the stream keeps (backstop)",
		long:  "delivery stream MaxAge: a disk backstop only, and the floor of any chat's retention; keep it far below `--history-retention`"})
	f.Duration(&c.Stream.Duplicates, "stream-duplicates", "CHATD_STREAM_DUPLICATES", stream.DefaultDuplicates, doc{group: groupDelivery,
		short: "a resent message within it is dropped",
		long:  "the delivery stream's duplicate window (`Nats-Msg-Id`): a relay's republish within it is dropped. The server keeps every message id stored within it in memory, so a longer window costs memory (BENCHMARKS.md, \"What is slow or costly\")"})
	f.Duration(&c.Reclaim.Interval, "gc-interval", "CHATD_GC_INTERVAL", reclaim.DefaultInterval, doc{group: groupDelivery,
		short: "how often delivered messages are purged",
		long:  "how often the reclaim pass purges the delivery stream below the lowest sequence anyone may still need: every node consumer's acked prefix and every connection's pins (the Tetris floor, `pkg/reclaim`)"})
	f.Duration(&c.Push.CheckInterval, "consumer-check", "CHATD_CONSUMER_CHECK", push.DefaultCheckInterval, doc{group: groupDelivery,
		short: "how often the node checks its consumer",
		long:  "how often the node checks that its JetStream consumer exists (recreated if gone)"})
}

func declareWebhooks(f *envFlags, s *settings) {
	c := &s.node
	f.Repeated(&s.webhookURLs, "webhook", "CHATD_WEBHOOK", doc{group: groupWebhooks, unset: "none",
		short: "POST every event here; repeatable",
		long:  "POST every event (message, edit, delete, reaction, member changes, reads, and offline notifications: `--notify-after`) to this URL, signed as Standard Webhooks says; repeat for more endpoints (the variable: comma-separated). Per-endpoint secrets and event filters: the config file's `webhooks` list (docs/integrations.md). Every event then goes through the delivery stream; those every recipient took live apart from live delivery"})
	f.String(&s.webhookSecret, "webhook-secret", "CHATD_WEBHOOK_SECRET", "", doc{group: groupWebhooks, unset: "none",
		short: "whsec_ signing key; set by env",
		long:  "`whsec_` and the base64 of the key that signs webhook requests (`whsec_$(openssl rand -base64 32)`); several, separated by spaces, sign each request with each, for rotating a secret (docs/integrations.md); set it in the environment: a flag is visible in the process list"})
	f.Int(&c.Webhook.MaxAttempts, "webhook-max-attempts", "CHATD_WEBHOOK_MAX_ATTEMPTS", webhook.DefaultMaxAttempts, doc{group: groupWebhooks,
		short: "posts before an event is set aside",
		long:  "posts of one event before it is set aside as a dead letter (`GET /api/admin/webhooks/failed`); the backoff doubles from 1 s to 1 min between them"})
	f.Duration(&c.Webhook.Timeout, "webhook-timeout", "CHATD_WEBHOOK_TIMEOUT", webhook.DefaultTimeout, doc{group: groupWebhooks,
		short: "longest a webhook post may take",
		long:  "how long one webhook post may take before it counts as failed"})
	f.Int(&c.Webhook.Workers, "webhook-workers", "CHATD_WEBHOOK_WORKERS", webhook.DefaultWorkers, doc{group: groupWebhooks,
		short: "chats posted to each endpoint at once",
		long:  "chats posted to each endpoint at once; each chat's events stay in order"})
	f.Duration(&c.Notify.After, "notify-after", "CHATD_NOTIFY_AFTER", notify.DefaultAfter, doc{group: groupWebhooks,
		short: "window before notifying; 0: off",
		long:  "a member who neither acked nor read a message this long after it was accepted gets a `notify` event on the webhooks that take it, one per chat for every message of that window (docs/integrations.md \"Offline notifications\"); 0 turns notifications off"})
	f.String(&c.Notify.Preview, "notify-preview", "CHATD_NOTIFY_PREVIEW", notify.DefaultPreview, doc{group: groupWebhooks,
		short: "none, sender or text",
		long:  "what a `notify` event tells of the message: `none`, `sender` (who sent it) or `text` (the sender and the first 140 characters)"})
}

func declareCluster(f *envFlags, c *node.Config) {
	f.String(&c.NodeID, "node-id", "CHATD_NODE_ID", "", doc{group: groupCluster, unset: "random",
		short: "this node's name",
		long:  "this node's name (its JetStream consumer is `push-<id>`); empty generates one in the data dir"})
	f.Duration(&c.Relay.StepDownAfter, "relay-step-down-after", "CHATD_RELAY_STEP_DOWN_AFTER", stream.DefaultStepDownAfter, doc{group: groupCluster,
		short: "give up relaying after failing this",
		long:  "give the relay (its lock) up to another node after publishing to NATS has failed this long"})
	f.Duration(&c.Presence.TTL, "presence-ttl", "CHATD_PRESENCE_TTL", signal.DefaultPresenceTTL, doc{group: groupCluster,
		short: "dead node's users offline after this",
		long:  "a node's presence heartbeat expires this long after its last refresh: a dead node's users go offline within it (plus a tick)"})
	f.Duration(&c.Presence.Refresh, "presence-refresh", "CHATD_PRESENCE_REFRESH", signal.DefaultPresenceRefresh, doc{group: groupCluster,
		short: "presence renewal; under half the TTL",
		long:  "how often a node rewrites its presence heartbeat; it must be under half of `--presence-ttl`"})
	f.Int(&c.Presence.Audience, "presence-audience", "CHATD_PRESENCE_AUDIENCE", signal.DefaultPresenceAudience, doc{group: groupCluster,
		short: "largest chat told who is online",
		long:  "the largest chat whose members hear of a member going online or offline"})
}

func declareObservability(f *envFlags, s *settings) {
	f.String(&s.logLevel, "log-level", "CHATD_LOG_LEVEL", "info", doc{group: groupObservability,
		short: "debug, info, warn or error"})
	f.Bool(&s.logJSON, "log-json", "CHATD_LOG_JSON", false, doc{group: groupObservability,
		short: "log JSON instead of text"})
	f.String(&s.node.DebugListen, "debug-listen", "CHATD_DEBUG_LISTEN", "", doc{group: groupObservability, unset: "off",
		short: "serve Go's profiler here; keep it private",
		long:  "serve Go's profiler (`/debug/pprof/`, without `cmdline`) on this address, e.g. `127.0.0.1:6060`; keep it private"})
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
	if err := f.checkNotNegative(fs); err != nil {
		return err
	}
	if err := notify.CheckPreview(s.node.Notify.Preview); err != nil {
		return fmt.Errorf("--notify-preview (CHATD_NOTIFY_PREVIEW): %w", err)
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
