package push_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// recConn is a connection that records what push hands it, standing in for
// a WebSocket client. It is not a mock of our storage or broker: push runs
// against a real JetStream.
type recConn struct {
	user, device string

	mu sync.Mutex
	// queued is what Deliver took and no Flush has written yet; got, outs
	// and at are what Flush wrote, as a socket would have it.
	queued  []*push.Outgoing
	got     []chatd.Message
	outs    []*push.Outgoing
	at      []time.Time
	closed  push.Reason
	closeAt time.Time
	// presence is what UserPresent was told, in order.
	presence []bool
}

func (c *recConn) User() string   { return c.user }
func (c *recConn) Device() string { return c.device }
func (c *recConn) Deliver(m *push.Outgoing) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed != 0 {
		return false
	}
	c.queued = append(c.queued, m)
	return true
}

// Flush writes what Deliver queued, as a session's socket write does.
func (c *recConn) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, m := range c.queued {
		c.got = append(c.got, m.Message)
		c.outs = append(c.outs, m)
		c.at = append(c.at, now)
	}
	c.queued = c.queued[:0]
}

// unflushed is how many frames Deliver took that no Flush wrote.
func (c *recConn) unflushed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queued)
}
func (c *recConn) Close(r push.Reason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == 0 {
		c.closed = r
		c.closeAt = time.Now()
	}
}

// UserPresent records the registry's presence calls in order.
func (c *recConn) UserPresent(present bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.presence = append(c.presence, present)
}

func (c *recConn) received() []chatd.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]chatd.Message(nil), c.got...)
}

func (c *recConn) closedWith() push.Reason {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// env is a running JetStream with the delivery stream.
type env struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	nextID int64
}

func mustEnv(t testing.TB) *env {
	t.Helper()
	js := testnats.JetStream(t)
	s, err := stream.Ensure(context.Background(), js, stream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{js: js, stream: s}
}

// publish puts one message for recipients into the stream, as the relay
// would, and returns its stream sequence.
func (e *env) publish(t testing.TB, from, device string, recipients ...string) (chatd.Message, uint64) {
	t.Helper()
	return e.publishMsg(t, e.newMsg(from), device, recipients...)
}

func (e *env) newMsg(from string) chatd.Message {
	e.nextID++
	return chatd.Message{ID: "m" + strconv.FormatInt(e.nextID, 10), CID: "c" + strconv.FormatInt(e.nextID, 10),
		Chat: "chat1", From: from, Body: "hi", Seq: e.nextID, TS: time.Now().UTC()}
}

// publishMsg publishes m as the relay would and returns its stream sequence.
func (e *env) publishMsg(t testing.TB, m chatd.Message, device string, recipients ...string) (chatd.Message, uint64) {
	t.Helper()
	data, err := json.Marshal(chatd.Envelope{OutboxID: e.nextID, Message: m, Device: device, Recipients: recipients})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := e.js.PublishMsg(context.Background(), &nats.Msg{Subject: stream.SubjectPrefix + m.Chat, Data: data},
		jetstream.WithMsgID(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	return m, ack.Sequence
}

// mustRegistry starts a push registry for node on e and stops it with t.
func mustRegistry(t testing.TB, e *env, node string, tweak func(*push.Config)) *push.Registry {
	t.Helper()
	cfg := push.Config{NodeID: node, JS: e.js, Stream: stream.DefaultName, Lease: 300 * time.Millisecond, MaxAttempts: 2, MaxPending: 20}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := push.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runRegistry(t, e, r, node)
	return r
}

// runRegistry runs r until the returned stop (idempotent) or the end of the
// test, and waits until its consumer is live.
func runRegistry(t testing.TB, e *env, r *push.Registry, node string) (stop func()) {
	t.Helper()
	stop = startRegistry(t, r)
	testwait.Until(t, "consumer live", func() bool {
		_, err := e.js.Consumer(context.Background(), stream.DefaultName, push.ConsumerName(node))
		return err == nil && r.Ready() == nil
	})
	return stop
}

// startRegistry runs r until the returned stop (idempotent) or the end of
// the test, without waiting for its consumer.
func startRegistry(t testing.TB, r *push.Registry) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("push run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func mustReclaimer(t *testing.T, e *env, pins reclaim.Pinner) *reclaim.Reclaimer {
	t.Helper()
	r, err := reclaim.New(reclaim.Config{Stream: e.stream, Pins: pins, ConsumerPrefix: push.ConsumerPrefix, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func streamHas(t *testing.T, e *env, seq uint64) bool {
	t.Helper()
	_, err := e.stream.GetMsg(context.Background(), seq)
	return err == nil
}

func (c *recConn) presenceCalls() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.presence)
}
