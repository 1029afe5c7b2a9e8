package node_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/stream"
)

// A node started while its NATS cluster has no quorum waits for JetStream
// to take its streams instead of exiting: a cluster started together with
// chatd elects its metadata leader in its first seconds, and a node that
// gave up on the first slow answer needed a supervisor to start it again.
func TestStartWaitsForAFormingCluster(t *testing.T) {
	c := testnats.StartCluster(t, 3)
	dsn := testpg.NewDatabase(t)
	c.Stop(1)
	c.Stop(2)
	var logs testlog.Buffer
	cfg := node.Config{DatabaseURL: dsn, NATSURL: c.URLs(), JWTSecret: opsSecret, NodeID: "forming",
		Stream: stream.Config{Replicas: 3}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	started := make(chan error, 1)
	go func() {
		_, err := nodetest.Start(t, cfg)
		started <- err
	}()
	// Longer than one JetStream request's timeout (5 s), so a node that
	// does not wait has given up by the time the quorum is back.
	const down = 6 * time.Second
	select {
	case err := <-started:
		t.Fatalf("Start returned before the quorum was back: %v; want it to wait for JetStream", err)
	case <-time.After(down):
	}
	c.Restart(t, 1)
	c.Restart(t, 2)
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start once the quorum was back: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the node had not started 90 s after the quorum was back")
	}
	if !strings.Contains(logs.String(), "JetStream is not ready") {
		t.Errorf("no warning while the node waited; its log:\n%s", logs.String())
	}
}

// A refusal that waiting does not mend ends the start at once: three
// replicas on one NATS server without clustering.
func TestStartRefusedByJetStreamFailsAtOnce(t *testing.T) {
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	var logs testlog.Buffer
	begin := time.Now()
	_, err := nodetest.Start(t, node.Config{DatabaseURL: testpg.NewDatabase(t), NATSURL: ns.ClientURL(), JWTSecret: opsSecret,
		NodeID: "refused", Stream: stream.Config{Replicas: 3}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		t.Fatal("a node asking one unclustered server for three replicas started")
	}
	if strings.Contains(logs.String(), "JetStream is not ready") {
		t.Errorf("the node waited on a refusal (%v) in %v; its log:\n%s", err, time.Since(begin), logs.String())
	}
	t.Logf("refused: %v", err)
}
