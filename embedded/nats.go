// Package embedded runs the services chatd needs on a single box without any
// setup by hand: an in-process NATS server with JetStream, and a private
// PostgreSQL cluster run from the machine's installed server binaries as a
// supervised child process.
package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsReadyTimeout bounds how long StartNATS waits for the server to accept
// connections. JetStream recovers its store before it is ready, so a large
// store needs headroom.
const natsReadyTimeout = 30 * time.Second

// natsReadyPoll is how often StartNATS looks for a fatal error while it
// waits for the server to be ready.
const natsReadyPoll = 100 * time.Millisecond

// NATSConfig configures StartNATS.
type NATSConfig struct {
	// StoreDir is the JetStream store directory. Required.
	StoreDir string
	// Listen is a "host:port" on which to open a TCP listener so that the
	// `nats` CLI can inspect the server. Empty means no listener at all:
	// chatd itself connects in-process. Port 0 picks a free port.
	Listen string
	// NkeyFile is the nkey seed file of the one user the server accepts
	// (generated, mode 0600, on first use). Every client must prove it
	// holds the key, Connect's in-process clients included; the nats CLI
	// reads it with --nkey. Empty means no authentication, allowed only
	// without a listener or with a loopback one.
	NkeyFile string
	// Logger receives the server's log lines. Nil discards them.
	Logger *slog.Logger
}

// NATS is an in-process NATS server with JetStream enabled. Its methods are
// safe for concurrent use.
type NATS struct {
	srv  *server.Server
	log  *slog.Logger
	auth nats.Option // signs in-process connections; nil without NkeyFile
}

// StartNATS starts the server and returns once it accepts connections.
func StartNATS(cfg NATSConfig) (*NATS, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("start nats: StoreDir is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "nats")

	opts := &server.Options{
		ServerName: "chatd",
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		// The process owns signal handling (graceful shutdown order); the
		// server must not install its own handlers.
		NoSigs:     true,
		DontListen: cfg.Listen == "",
	}
	if cfg.Listen != "" {
		host, port, err := splitListen(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("start nats: %w", err)
		}
		if cfg.NkeyFile == "" && !isLoopbackHost(host) {
			return nil, fmt.Errorf("start nats: listen address %q is not loopback and no credentials are set (NATSConfig.NkeyFile): anyone who reaches it could forge messages or purge the stream; listen on 127.0.0.1 or set an nkey file", cfg.Listen)
		}
		opts.Host, opts.Port = host, port
	}
	var auth nats.Option
	if cfg.NkeyFile != "" {
		kp, err := loadNkey(cfg.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("start nats: %w", err)
		}
		pub, _ := kp.PublicKey() // loadNkey checked it
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
		auth = nats.Nkey(pub, kp.Sign)
	}

	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	// Debug and trace stay off: trace logs every protocol line.
	fatal := &firstFatal{}
	srv.SetLogger(natsLogger{log: log, fatal: fatal}, false, false)
	srv.Start()
	if err := waitNATSReady(srv, fatal); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("start nats: %w", err)
	}
	n := &NATS{srv: srv, log: log, auth: auth}
	log.Info("nats started", "store_dir", cfg.StoreDir, "client_url", n.ClientURL(), "nkey_file", cfg.NkeyFile)
	return n, nil
}

// waitNATSReady waits until srv accepts connections. It gives up early
// when the server reported a fatal error (it then never becomes ready: a
// listener that cannot bind, say), and after natsReadyTimeout otherwise.
func waitNATSReady(srv *server.Server, fatal *firstFatal) error {
	deadline := time.Now().Add(natsReadyTimeout)
	for !srv.ReadyForConnections(natsReadyPoll) {
		if msg := fatal.get(); msg != "" {
			return fmt.Errorf("%s (is another chatd or NATS on that address? pick another --nats-listen)", msg)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", natsReadyTimeout)
		}
	}
	return nil
}

// splitListen parses "host:port". nats-server reads port 0 as its default
// 4222, so a requested 0 ("any free port") is mapped to server.RANDOM_PORT.
func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("nats listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("nats listen address %q: bad port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// Connect opens a client connection to the server through an in-process
// pipe, so it works without a TCP listener, authenticated with the nkey
// when the server has one. The caller closes it.
func (n *NATS) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name("chatd")}, opts...)
	if n.auth != nil {
		opts = append(opts, n.auth)
	}
	opts = append(opts, nats.InProcessServer(n.srv))
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect embedded nats: %w", err)
	}
	return nc, nil
}

// ClientURL returns the URL the `nats` CLI can use, or "" when the server
// was started without a TCP listener. An unspecified listen host (":4222")
// is reported as loopback, which is reachable from the same box.
func (n *NATS) ClientURL() string {
	addr, ok := n.srv.Addr().(*net.TCPAddr)
	if !ok || addr == nil {
		return ""
	}
	host := addr.IP
	if host.IsUnspecified() {
		host = net.IPv4(127, 0, 0, 1)
	}
	return "nats://" + net.JoinHostPort(host.String(), strconv.Itoa(addr.Port))
}

// Server returns the underlying server, for monitoring and tests.
func (n *NATS) Server() *server.Server { return n.srv }

// Shutdown stops the server, flushing JetStream state to the store, and
// returns once it has stopped. Calling it more than once is harmless.
func (n *NATS) Shutdown() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.log.Info("nats stopped")
}
