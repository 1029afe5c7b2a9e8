// Package testnats starts an in-process NATS server with JetStream for a
// test, its store in the test's temporary directory.
package testnats

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// logEnv, when set to any value, sends the server's log to stderr at Debug
// level, for debugging a test run.
const logEnv = "CHATD_TEST_NATSLOG"

// Start starts a private NATS server with JetStream for t, with its store in
// t.TempDir() and no TCP listener (connect with the returned server's
// Connect). It is shut down when t ends. It fails t if the server cannot
// start.
func Start(t testing.TB) *embedded.NATS {
	t.Helper()
	return start(t, "")
}

// StartListening is Start with a TCP listener on a free loopback port
// (the server's ClientURL), for tests that put a testproxy between a
// client and the server.
func StartListening(t testing.TB) *embedded.NATS {
	t.Helper()
	return start(t, "127.0.0.1:0")
}

func start(t testing.TB, listen string) *embedded.NATS {
	t.Helper()
	var log *slog.Logger
	if os.Getenv(logEnv) != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: t.TempDir(), Listen: listen, Logger: log})
	if err != nil {
		t.Fatalf("testnats: %v", err)
	}
	t.Cleanup(n.Shutdown)
	return n
}

// Connect connects to n in process, as the embedded node does; the
// connection closes when t ends.
func Connect(t testing.TB, n *embedded.NATS) *nats.Conn {
	t.Helper()
	nc, err := n.Connect()
	if err != nil {
		t.Fatalf("testnats: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Dial connects to url as a chatd node does, reconnecting fast and
// forever; the connection closes when t ends.
func Dial(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("testnats: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStreamOf is nc's JetStream.
func JetStreamOf(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("testnats: jetstream: %v", err)
	}
	return js
}

// JetStream starts a private server as Start does, connects to it, and
// returns the connection's JetStream; the connection closes when t ends.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	return JetStreamOf(t, Connect(t, Start(t)))
}
