package testnats

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testport"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterReadyTimeout bounds the wait for every server to accept
// connections and for JetStream to elect its meta leader.
const clusterReadyTimeout = 30 * time.Second

// Cluster is n in-process NATS servers with JetStream, clustered over
// routes on loopback: the shape of a production NATS cluster, so that a
// test can lose a stream leader (Stop its server) and bring it back
// (Restart) without processes of its own. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts []*server.Options // fixed at start: a restarted server keeps its ports and store

	mu      sync.Mutex
	servers []*server.Server // nil while stopped
}

// StartCluster starts n servers (3 or more for a JetStream quorum) with
// their stores under t.TempDir(), returns once JetStream has a meta leader
// that can place streams on all of them, and shuts them all down when t
// ends. Ports are picked free up front so every server can list every
// route and keep its addresses across a Restart (another process could
// take one in between: a loopback-only race the tests accept).
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := testport.Free(t, 2*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i])
	}
	c := &Cluster{servers: make([]*server.Server, n)}
	dir := t.TempDir()
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "testnats", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
		c.opts = append(c.opts, o)
	}
	t.Cleanup(c.shutdown)
	for i := range n {
		c.start(t, i)
	}
	c.waitMetaLeader(t)
	return c
}

// URLs is every server's client URL, comma-separated, as a node's NATSURL
// (nats.Connect) takes a cluster.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i, o := range c.opts {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return strings.Join(urls, ",")
}

// JetStream connects to the cluster as a node does (any server, reconnecting
// forever, so it rides out a Stop) and returns a JetStream on that
// connection, closed when t ends.
func (c *Cluster) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("connect %s: %v", c.URLs(), err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Server returns server i, or nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// StreamLeader returns the index of the running server that leads stream
// (in the default account), or -1 when none does right now.
func (c *Cluster) StreamLeader(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// Stop shuts server i down (its store stays for Restart). An in-process
// server cannot be SIGKILLed; its shutdown closes its connections and
// routes at once, which the others see as the server gone.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts a stopped server i again on its ports and store.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	c.start(t, i)
}

func (c *Cluster) start(t testing.TB, i int) {
	t.Helper()
	o := *c.opts[i] // the server keeps and changes its Options
	s, err := server.NewServer(&o)
	if err != nil {
		t.Fatalf("testnats: server %d: %v", i, err)
	}
	s.Start()
	if !s.ReadyForConnections(clusterReadyTimeout) {
		s.Shutdown()
		t.Fatalf("testnats: server %d not ready within %v", i, clusterReadyTimeout)
	}
	c.mu.Lock()
	c.servers[i] = s
	c.mu.Unlock()
}

// waitMetaLeader returns once a meta leader has current placement
// information for every running server. A leader alone is not enough: until
// each peer's first statistics reach it, it refuses an R3 stream with "no
// suitable peers for placement" (seen in CI).
func (c *Cluster) waitMetaLeader(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	for {
		c.mu.Lock()
		running := 0
		for _, s := range c.servers {
			if s != nil {
				running++
			}
		}
		for _, s := range c.servers {
			if s != nil && s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == running {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("testnats: no JetStream meta leader with all %d servers placeable within %v", len(c.servers), clusterReadyTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) shutdown() {
	for i := range c.opts {
		c.Stop(i)
	}
}
