package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/embedded"
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
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Node is one running chatd: its services and components. Start builds it;
// Run serves until its context ends and then shuts everything down in order.
type Node struct {
	cfg Config
	log *slog.Logger
	reg *prometheus.Registry
	ln  net.Listener
	// certs serves the HTTP listener's certificate; nil without TLS.
	certs *certReloader
	// debugLn serves the profiler; nil unless Config.DebugListen is set.
	debugLn net.Listener

	pg   *embedded.Postgres // nil with an external database
	nsrv *embedded.NATS     // nil with an external NATS
	nc   *nats.Conn
	js   jetstream.JetStream

	Store  *store.Store
	Ingest *ingest.Ingest
	Reads  *ingest.Reads
	// Forward sends this node's commit batches to the node whose relay
	// leads; nil with Config.Forward off.
	Forward *forward.Forwarder
	Relay   *stream.Relay
	Push    *push.Registry
	Reclaim *reclaim.Reclaimer
	API     *api.Server
	// Signals carries typing and receipts between the nodes.
	Signals *signal.Bus
	// Presence keeps the cluster's presence in its KV bucket.
	Presence *signal.Presence
	// Webhooks delivers the stream's events to the webhook endpoints.
	Webhooks *webhook.Deliverer
	// Notifier and Recorder are the offline notifications; nil while off.
	Notifier *notify.Notifier
	Recorder *notify.Recorder
	// Changes publishes member changes and reads for the webhooks; nil
	// while no endpoint takes them.
	Changes *changes.Publisher
	// outboxStats keeps the outbox counts /metrics serves; Run runs it.
	outboxStats *outboxStats
	// marks feed the store's failover repair (see seqMarks).
	marks *seqMarks
	// leads is whether this node's relay leads: only its commits are shared
	// with the other nodes for settling (push.Registry.Share).
	leads    atomic.Bool
	nodeID   string
	closeFns []func()
}

// Start brings up the services and builds every component. It opens the
// listeners first, so a busy port fails in a moment instead of after the
// slow services started. On error it stops whatever it started and returns
// an error that says what to do. The caller must call Run (which owns
// shutdown) or, if it will not, Close.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, reg: prometheus.NewRegistry(), marks: newSeqMarks(time.Now)}
	// Not a named result: a failed start returns a nil *Node, and the
	// cleanup must still reach the one that holds what was started.
	if err := n.start(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	cfg := n.cfg
	var err error
	if usesDataDir(cfg) {
		release, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return err
		}
		// First taken, last released: after PostgreSQL and NATS stopped.
		n.closeFns = append(n.closeFns, release)
	}
	if n.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return fmt.Errorf("listen on %s: %w (is another chatd running? pick another --listen)", cfg.Listen, err)
	}
	if cfg.TLSCertFile != "" {
		if n.certs, err = newCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return err
		}
		n.ln = tls.NewListener(n.ln, n.certs.tlsConfig())
	}
	if cfg.DebugListen != "" {
		if n.debugLn, err = net.Listen("tcp", cfg.DebugListen); err != nil {
			return fmt.Errorf("listen on %s: %w (pick another --debug-listen)", cfg.DebugListen, err)
		}
	}
	n.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.registerBuildInfo()
	if n.nodeID, err = n.resolveNodeID(); err != nil {
		return err
	}
	secret, err := JWTSecret(cfg)
	if err != nil {
		return err
	}
	// Checked here, before the slow services, though api.New checks it too.
	if len(secret) < api.MinJWTSecretBytes {
		return fmt.Errorf("the JWT secret (--jwt-secret) is %d bytes, want at least %d random bytes (e.g. openssl rand -hex 32); pass it in CHATD_JWT_SECRET rather than the flag, which any local user can read in the process list",
			len(secret), api.MinJWTSecretBytes)
	}
	if err := n.startDatabase(ctx); err != nil {
		return err
	}
	if err := n.startNATS(); err != nil {
		return err
	}
	if err := n.build(ctx, secret); err != nil {
		return err
	}
	if err := n.raiseToStream(ctx); err != nil {
		return err
	}
	n.registerDatabaseGauges()
	return nil
}

func (n *Node) resolveNodeID() (string, error) {
	if n.cfg.NodeID != "" {
		return n.cfg.NodeID, nil
	}
	if n.cfg.DataDir == "" {
		return "", errors.New("set --node-id (CHATD_NODE_ID): no data dir to keep a generated one in")
	}
	return persistentValue(n.cfg.DataDir, "node-id", 6)
}

func (n *Node) startDatabase(ctx context.Context) error {
	dsn := n.cfg.DatabaseURL
	if dsn == "" {
		pg, err := embedded.StartPostgres(ctx, embedded.PostgresConfig{
			Dir:    filepath.Join(n.cfg.DataDir, "pg"),
			Logger: n.log,
		})
		if err != nil {
			return err
		}
		n.pg = pg
		n.closeFns = append(n.closeFns, func() { _ = pg.Stop(context.Background()) })
		if err := createDatabase(ctx, pg, "chatd"); err != nil {
			return err
		}
		dsn = pg.DSN("chatd")
	}
	sc := n.cfg.Store
	sc.Logger, sc.MinChatRetention, sc.HighWater = n.log, n.cfg.Stream.MaxAge, n.highWater
	sc.RecordMembers, sc.RecordReads = n.cfg.changesWanted(chatd.EventMember), n.cfg.changesWanted(chatd.EventRead)
	st, err := store.Open(ctx, dsn, sc)
	if err != nil {
		if n.cfg.DatabaseURL != "" {
			return fmt.Errorf("open database: %w (is PostgreSQL up and reachable? check --database-url / CHATD_DATABASE_URL)", err)
		}
		return fmt.Errorf("open database: %w", err)
	}
	n.Store = st
	n.closeFns = append(n.closeFns, st.Close)
	return nil
}

func (n *Node) startNATS() error {
	var err error
	if n.cfg.NATSURL == "" {
		// Always authenticated, listener or not: --nats-listen then never
		// opens a port that lets anyone forge envelopes or purge the stream.
		n.nsrv, err = embedded.StartNATS(embedded.NATSConfig{
			StoreDir: filepath.Join(n.cfg.DataDir, "nats"),
			Listen:   n.cfg.NATSListen,
			NkeyFile: NATSNkeyFile(n.cfg.DataDir),
			Logger:   n.log,
		})
		if err != nil {
			return err
		}
		n.closeFns = append(n.closeFns, n.nsrv.Shutdown)
		n.nc, err = n.nsrv.Connect(nats.Name(natsConnName(n.nodeID)))
		if err != nil {
			return fmt.Errorf("connect to nats: %w", err)
		}
	} else if n.nc, err = connectExternalNATS(n.cfg.NATSURL, n.nodeID, n.cfg.NATS); err != nil {
		return err
	}
	n.closeFns = append(n.closeFns, n.nc.Close)
	// An async publish whose ack was lost with a server never resolves
	// without a timeout, and the notifier and the changes publisher wait
	// on theirs.
	n.js, err = jetstream.New(n.nc, jetstream.WithPublishAsyncTimeout(asyncAckTimeout))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// Close releases whatever Start acquired, newest first. Run calls it at the
// end of its shutdown; call it directly only when Run will not run.
func (n *Node) Close() {
	if n.ln != nil {
		_ = n.ln.Close()
	}
	if n.debugLn != nil {
		_ = n.debugLn.Close()
	}
	for i := len(n.closeFns) - 1; i >= 0; i-- {
		n.closeFns[i]()
	}
	n.closeFns = nil
}

// Addr is the HTTP address the node listens on.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// DebugAddr is the profiler's address, empty without Config.DebugListen.
func (n *Node) DebugAddr() string {
	if n.debugLn == nil {
		return ""
	}
	return n.debugLn.Addr().String()
}

// URL is the node's base HTTP URL: https with Config.TLSCertFile.
func (n *Node) URL() string {
	if n.certs != nil {
		return "https://" + n.Addr()
	}
	return "http://" + n.Addr()
}

// NodeID names this node (its consumer is push-<NodeID>).
func (n *Node) NodeID() string { return n.nodeID }

// JetStream is the node's JetStream context, for tests and tools.
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// Postgres is the managed database server, nil with an external one.
func (n *Node) Postgres() *embedded.Postgres { return n.pg }

// NATS is the embedded NATS server, nil with an external one.
func (n *Node) NATS() *embedded.NATS { return n.nsrv }

// Registry is the node's Prometheus registry.
func (n *Node) Registry() *prometheus.Registry { return n.reg }
