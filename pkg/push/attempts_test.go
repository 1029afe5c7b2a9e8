package push_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
)

// A message delivered MaxAttempts times and never acked: JetStream must not
// give it up (and move the node's ack floor past it) while its recipient is
// still registered and pinned. The clock is frozen, so the reaper never
// fires: only the consumer's extra delivery (MaxDeliver = attempts+1) can
// end the wait, and it must abandon the recipient first.
func TestAckFloorNeverPassesStuckMessageBeforeAbandon(t *testing.T) {
	e := mustEnv(t)
	frozen := time.Now()
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Now = func() time.Time { return frozen } })
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	_, s1 := e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "both attempts", func() bool { return len(bob.received()) == 2 })
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Messages for nobody are acked at once: each ack would carry a lazy
		// ack floor past s1 once JetStream gave s1 up.
		e.publish(t, "alice", "web", "carol")
		floor := ackFloor(t, e, "a")
		pinned := len(r.Pins()) > 0 // read after the floor: withdrawal unpins before it acks
		if floor >= s1 && pinned {
			t.Fatalf("ack floor %d passed stuck message %d while its recipient was still registered and pinned (not abandoned)", floor, s1)
		}
		if floor >= s1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stuck message %d never abandoned within 5s (ack floor %d, bob closed with %v)", s1, floor, bob.closedWith())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := bob.closedWith(); got != push.ReasonAbandoned {
		t.Fatalf("bob closed with %v, want abandoned", got)
	}
	if got := len(bob.received()); got != 2 {
		t.Fatalf("bob got %d frames, want 2 (the extra delivery sends none)", got)
	}
}

// The last attempt is lost on its way to the node (here: taken by another
// puller of the node's durable consumer while the node was not pulling).
// JetStream must deliver the message once more, so the reaper abandons the
// stuck recipient and nothing of it stays tracked.
func TestLostLastDeliveryStillAbandons(t *testing.T) {
	e := mustEnv(t)
	r, err := push.New(push.Config{NodeID: "a", JS: e.js, Stream: stream.DefaultName, Lease: 300 * time.Millisecond, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	stop := runRegistry(t, e, r, "a")
	bob := &recConn{user: "bob", device: "phone"}
	r.Attach(bob)
	_, s1 := e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "first attempt", func() bool { return len(bob.received()) == 1 })
	stop()

	// Swallow the last attempt: fetch it from the consumer and drop it.
	cons, err := e.js.Consumer(context.Background(), stream.DefaultName, push.ConsumerName("a"))
	if err != nil {
		t.Fatal(err)
	}
	lost := false
	for deadline := time.Now().Add(5 * time.Second); !lost && time.Now().Before(deadline); {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if md.Sequence.Stream == s1 && md.NumDelivered == 2 {
				lost = true
			}
		}
	}
	if !lost {
		t.Fatal("could not take the last attempt away from the node")
	}

	runRegistry(t, e, r, "a")
	testwait.Until(t, "abandon after the lost last attempt", func() bool { return bob.closedWith() == push.ReasonAbandoned })
	if pins := r.Pins(); len(pins) != 0 {
		t.Fatalf("pins after abandon: %+v, want none", pins)
	}
	if n := r.InFlight(); n != 0 {
		t.Fatalf("%d stream messages still tracked after abandon, want 0", n)
	}
	testwait.Until(t, "ack floor past the abandoned message", func() bool { return ackFloor(t, e, "a") >= s1 })
	if got := len(bob.received()); got != 1 {
		t.Fatalf("bob got %d frames, want 1 (the lost attempt never reached him; the extra delivery sends none)", got)
	}
}
