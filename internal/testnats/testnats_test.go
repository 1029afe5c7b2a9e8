package testnats_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStartGivesWorkingJetStream(t *testing.T) {
	n := testnats.Start(t)
	nc, err := n.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "s", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Sequence != 1 {
		t.Fatalf("first sequence: got %d, want 1", ack.Sequence)
	}
}

func TestStartShutsDownWhenTestEnds(t *testing.T) {
	var n *embedded.NATS
	t.Run("user", func(t *testing.T) { n = testnats.Start(t) })
	if n.Server().Running() {
		t.Fatal("server still running after its test ended")
	}
}
