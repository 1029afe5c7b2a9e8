package push_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
)

// No session registers (so the gateway sends no `hello`) before the node's
// consumer exists: with DeliverNew, what is published before it exists
// never reaches the node. A foreign consumer of the node's name that push
// cannot take over keeps it from existing here.
func TestAttachRefusedUntilConsumerLive(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	if _, err := e.js.CreateConsumer(ctx, stream.DefaultName, jetstream.ConsumerConfig{
		Durable: push.ConsumerName("a"), AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	r, err := push.New(push.Config{NodeID: "a", JS: e.js, Stream: stream.DefaultName, Lease: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bob := &recConn{user: "bob", device: "phone"}
	if err := r.Attach(bob); !errors.Is(err, push.ErrNotConsuming) {
		t.Fatalf("attach before Run: got %v, want ErrNotConsuming", err)
	}
	startRegistry(t, r)
	time.Sleep(500 * time.Millisecond)
	if err := r.Ready(); !errors.Is(err, push.ErrNotConsuming) {
		t.Fatalf("ready while a foreign consumer holds the name: got %v, want ErrNotConsuming", err)
	}
	if err := r.Attach(bob); err == nil {
		t.Fatal("attach succeeded while the node's consumer does not exist")
	}
	if err := e.js.DeleteConsumer(ctx, stream.DefaultName, push.ConsumerName("a")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "ready", func() bool { return r.Ready() == nil })
	if err := r.Attach(bob); err != nil {
		t.Fatalf("attach once live: %v", err)
	}
	m, _ := e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "delivery", func() bool { return len(bob.received()) == 1 })
	if got := bob.received()[0].ID; got != m.ID {
		t.Fatalf("got %s, want %s", got, m.ID)
	}
}

// squattingJS is the real JetStream, except that right after its first
// consumer create succeeds someone else deletes that consumer and makes a
// foreign one of the same name: the race a node loses when an operator (or
// a test) replaces its consumer between the create and what follows it.
type squattingJS struct {
	jetstream.JetStream
	squat jetstream.ConsumerConfig
	once  sync.Once
}

func (s *squattingJS) CreateOrUpdateConsumer(ctx context.Context, streamName string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	cons, err := s.JetStream.CreateOrUpdateConsumer(ctx, streamName, cfg)
	if err != nil {
		return nil, err
	}
	s.once.Do(func() {
		if err = s.JetStream.DeleteConsumer(ctx, streamName, cfg.Durable); err == nil {
			_, err = s.JetStream.CreateConsumer(ctx, streamName, s.squat)
		}
	})
	return cons, err
}

// A consumer replaced by a foreign one between its create and the node's
// first look at it is not the node's: the node stays not ready (the foreign
// consumer would deliver from the stream's start) until the name is free.
func TestConsumerReplacedWhileCreatedIsNotTaken(t *testing.T) {
	e := mustEnv(t)
	js := &squattingJS{JetStream: e.js, squat: jetstream.ConsumerConfig{
		Durable: push.ConsumerName("a"), AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	}}
	r, err := push.New(push.Config{NodeID: "a", JS: js, Stream: stream.DefaultName, Lease: 10 * time.Second,
		CheckInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	startRegistry(t, r)
	ctx := context.Background()
	testwait.Until(t, "the squatter in place", func() bool {
		info, err := e.js.Consumer(ctx, stream.DefaultName, push.ConsumerName("a"))
		return err == nil && info.CachedInfo().Config.DeliverPolicy == jetstream.DeliverAllPolicy
	})
	for range 5 {
		if err := r.Ready(); !errors.Is(err, push.ErrNotConsuming) {
			t.Fatalf("ready while a foreign consumer holds the name: got %v, want ErrNotConsuming", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.js.DeleteConsumer(ctx, stream.DefaultName, push.ConsumerName("a")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "ready once the name is free", func() bool { return r.Ready() == nil })
}

// A consumer deleted behind the node's back is recreated: the sessions it
// delivered to are withdrawn (ReasonResync: they resync from history) with
// their pins and tracking, and delivery resumes for new sessions. The
// failed pull's warning names the consumer and says what to check.
func TestDeletedConsumerRecreatedAndSessionsResynced(t *testing.T) {
	e := mustEnv(t)
	var logs testlog.Buffer
	r := mustRegistry(t, e, "a", func(c *push.Config) {
		c.Lease = 10 * time.Second
		c.CheckInterval = 200 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	bob := &recConn{user: "bob", device: "phone"}
	if err := r.Attach(bob); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "alice", "web", "bob")
	testwait.Until(t, "pending delivery", func() bool { return len(r.Pins()) == 1 })
	if err := e.js.DeleteConsumer(context.Background(), stream.DefaultName, push.ConsumerName("a")); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	testwait.Until(t, "bob resynced", func() bool { return bob.closedWith() == push.ReasonResync })
	if pins := r.Pins(); len(pins) != 0 {
		t.Fatalf("pins after the consumer was lost: %+v, want none", pins)
	}
	if n := r.InFlight(); n != 0 {
		t.Fatalf("%d stream messages still tracked after the consumer was lost, want 0", n)
	}
	testwait.Until(t, "consumer recreated", func() bool {
		_, err := e.js.Consumer(context.Background(), stream.DefaultName, push.ConsumerName("a"))
		return err == nil && r.Ready() == nil
	})
	carol := &recConn{user: "carol", device: "web"}
	if err := r.Attach(carol); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "alice", "web", "carol")
	testwait.Until(t, "delivery after recreate", func() bool { return len(carol.received()) == 1 })
	if took := time.Since(deleted); took > 5*time.Second {
		t.Fatalf("live delivery resumed %v after the delete, want within 5s", took)
	}
	if got := logs.String(); !strings.Contains(got, `msg="reading the delivery stream failed; the messages it holds for this node's sessions wait until a pull succeeds (check NATS)" component=push node=a consumer=push-a`) {
		t.Fatalf("the pull cut by the delete logged:\n%s\nwant the consume warning naming push-a and what to check", got)
	}
}
