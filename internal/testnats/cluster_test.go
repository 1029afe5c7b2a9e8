package testnats_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testnats"
	"github.com/nats-io/nats.go/jetstream"
)

// A three-server cluster carries an R3 stream; stopping the stream's leader
// elects another, the stream keeps its messages and takes new ones, and the
// stopped server comes back on its old ports.
func TestClusterSurvivesLosingTheStreamLeader(t *testing.T) {
	c := testnats.StartCluster(t, 3)
	js := c.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Replicas: 3}); err != nil {
		t.Fatalf("create R3 stream: %v", err)
	}
	if _, err := js.Publish(ctx, "s", []byte("before")); err != nil {
		t.Fatalf("publish: %v", err)
	}
	old := waitLeader(t, c, -1)
	c.Stop(old)
	next := waitLeader(t, c, old)
	t.Logf("stream leader n%d stopped; n%d leads", old+1, next+1)

	ack, err := publishRetrying(ctx, js, "after")
	if err != nil {
		t.Fatalf("publish after the leader change: %v", err)
	}
	if ack.Sequence != 2 {
		t.Fatalf("sequence after the leader change: got %d, want 2", ack.Sequence)
	}
	c.Restart(t, old)
	if c.Server(old) == nil || !c.Server(old).Running() {
		t.Fatalf("server n%d not running after Restart", old+1)
	}
}

// waitLeader waits up to 20 s for a stream leader other than not.
func waitLeader(t *testing.T, c *testnats.Cluster, not int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if i := c.StreamLeader("S"); i >= 0 && i != not {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream leader (other than %d) within 20s", not)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// publishRetrying publishes until the stream answers: the client may still
// be reconnecting to a surviving server.
func publishRetrying(ctx context.Context, js jetstream.JetStream, body string) (*jetstream.PubAck, error) {
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ack, err := js.Publish(pctx, "s", []byte(body))
		cancel()
		if err == nil || ctx.Err() != nil {
			return ack, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
