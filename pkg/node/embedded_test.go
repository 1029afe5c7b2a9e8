package node_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// mustTempDir makes a fresh directory with mode perm, removed when t ends.
func mustTempDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chatd-node-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mustReady waits up to 10 s for the node's /readyz to answer 200.
func mustReady(t *testing.T, n *nodetest.Node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(n.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not ready within 10s (last: %v, %v)", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEmbeddedNATSListenerNeedsTheDataDirNkey: --nats-listen exposes the
// embedded NATS only to holders of the nkey in the data dir; chatd itself
// (its in-process connection) keeps working with it. The stream chatd made
// has the duplicate window it was configured with (--stream-duplicates).
func TestEmbeddedNATSListenerNeedsTheDataDirNkey(t *testing.T) {
	dataDir := filepath.Join(mustTempDir(t, 0o755), "data")
	n := nodetest.Run(t, node.Config{DataDir: dataDir, NATSListen: "127.0.0.1:0", Stream: stream.Config{Duplicates: 45 * time.Second}})
	mustReady(t, n)
	url := n.NATS().ClientURL()

	if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatalf("anonymous client connected to %s, want it refused", url)
	}
	opt, err := nats.NkeyOptionFromSeed(node.NATSNkeyFile(dataDir))
	if err != nil {
		t.Fatalf("nkey file: %v", err)
	}
	nc, err := nats.Connect(url, opt, nats.NoReconnect())
	if err != nil {
		t.Fatalf("connect with %s: %v", node.NATSNkeyFile(dataDir), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream.DefaultName)
	if err != nil {
		t.Fatalf("stream %s, made by chatd over its own connection: %v", stream.DefaultName, err)
	}
	if got := s.CachedInfo().Config.Duplicates; got != 45*time.Second {
		t.Fatalf("stream's duplicate window %v, want the configured 45s", got)
	}
}

// TestEmbeddedNodeAsRootInA0700Home is the README's `make run` as root in a
// clone under a 0700 home: the node becomes ready, its PostgreSQL cluster
// lives where the postgres user can reach it, and a restart finds it again
// with its data.
func TestEmbeddedNodeAsRootInA0700Home(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs PostgreSQL as another user (postgres); as any other user the server reaches its own data dir")
	}
	dataDir := filepath.Join(mustTempDir(t, 0o700), "clone", "data")
	n := nodetest.Run(t, node.Config{DataDir: dataDir})
	mustReady(t, n)
	pgDir := n.Postgres().Dir()
	t.Cleanup(func() {
		os.RemoveAll(filepath.Dir(pgDir))
		_ = os.Remove(filepath.Dir(filepath.Dir(pgDir))) // only if no other cluster lives there
	})
	if !strings.HasPrefix(pgDir, "/var/lib/chatd/") {
		t.Fatalf("cluster dir: got %s, want one under /var/lib/chatd", pgDir)
	}
	dsn := n.Postgres().DSN("chatd")
	pgExec(t, dsn, "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept')")
	if err := n.Stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}

	n = nodetest.Run(t, node.Config{DataDir: dataDir})
	mustReady(t, n)
	if got := n.Postgres().Dir(); got != pgDir {
		t.Fatalf("cluster dir after restart: got %s, want %s", got, pgDir)
	}
	var body string
	if err := pgConn(t, n.Postgres().DSN("chatd")).QueryRow(context.Background(), "SELECT body FROM notes").Scan(&body); err != nil || body != "kept" {
		t.Fatalf("after restart: got %q (%v), want %q", body, err, "kept")
	}
}

func pgConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pgExec(t *testing.T, dsn, sql string) {
	t.Helper()
	if _, err := pgConn(t, dsn).Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
