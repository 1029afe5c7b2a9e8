package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
)

// On a three-server NATS cluster (stream R3), stopping the stream's leader
// mid-run loses nothing: the endpoint gets every event, in per-chat order.
func TestSurvivesAStreamLeaderChange(t *testing.T) {
	c := testnats.StartCluster(t, 3)
	js := c.JetStream(t)
	ctx := context.Background()
	if _, err := stream.Ensure(ctx, js, stream.Config{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	r := &rig{js: js, st: st, seq: map[string]int64{}}
	rc := newReceiver(t)
	d := r.start(t, js, webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}, AckWait: 2 * time.Second})
	waitDelivering(t, d)

	want := map[string]int64{}
	publish := func(n int) {
		for i := range n {
			chat := []string{"c1", "c2"}[i%2]
			r.publish(t, chat, "")
			want[chat]++
		}
	}
	publish(10)
	rc.waitUntil(t, "the first ten", func(r *receiver) bool { return r.distinct() == 10 })
	leader := c.StreamLeader(stream.DefaultName)
	if leader < 0 {
		t.Fatal("no stream leader")
	}
	c.Stop(leader)
	publish(10)
	rc.waitUntil(t, "all twenty after the leader change", func(r *receiver) bool { return r.distinct() == 20 })
	rc.checkOrder(t, want)
}
