package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testproxy"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/fasthttp/websocket"
	"github.com/nats-io/nats.go/jetstream"
)

// readyStatus is the node's /readyz status code.
func readyStatus(t *testing.T, rn *runningNode) int {
	t.Helper()
	resp, err := http.Get(rn.URL() + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// dialStatus opens a WebSocket for user and reads the first frame. It
// returns the HTTP status of a refused upgrade (0 when upgraded), the first
// frame's type ("" if none) and the close code if the server closed first.
func dialStatus(t *testing.T, rn *runningNode, user string) (status int, first string, closeCode int) {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + apitest.Token(t, []byte(testSecret), user, "")}}
	conn, resp, err := websocket.DefaultDialer.Dial("ws://"+rn.Addr()+"/ws", h)
	if err != nil {
		if resp != nil {
			return resp.StatusCode, "", 0
		}
		t.Fatalf("dial %s: %v", user, err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var f rawMsg
	err = conn.ReadJSON(&f)
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return 0, "", ce.Code
	}
	if err != nil {
		t.Fatalf("read first frame: %v", err)
	}
	return 0, f.Type, 0
}

// consumerExists reports whether node id's own consumer exists, with the
// deliver policy a node creates it with.
func consumerExists(t *testing.T, js jetstream.JetStream, id string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream.DefaultName, "push-"+id)
	if err != nil {
		return false
	}
	info, err := c.Info(ctx)
	return err == nil && info.Config.DeliverPolicy == jetstream.DeliverNewPolicy
}

// A node whose consumer is deleted behind its back (inactive threshold after
// a partition, a stream reset, an operator) notices, recreates it and
// resyncs its sessions: the recipient's client is closed, reconnects,
// fills the gap from history, and live delivery from another node resumes
// within 5 s. Nothing accepted is lost.
func TestDeletedConsumerIsRecreatedAndSessionsResync(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{}))
	b := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "b", node.Config{}))

	bob := mustPeer(t, b.URL(), "bob", "", nil)
	chat := bob.mustDirect(t, "alice")
	alice := mustPeer(t, a.URL(), "alice", "", func(c *client.Config) { c.Chats = []string{chat} })
	alice.waitConnected(t, 1)
	before := bob.sendN(t, chat, "before", 5, 10*time.Millisecond)
	alice.reconcile(t, chat, 1, idsAfter(0, before), 10*time.Second)

	// Delete node a's consumer while messages keep coming from node b.
	sending := make(chan []client.Accepted, 1)
	go func() { sending <- bob.sendN(t, chat, "during", 20, 50*time.Millisecond) }()
	time.Sleep(200 * time.Millisecond)
	if err := a.JetStream().DeleteConsumer(context.Background(), stream.DefaultName, "push-a"); err != nil {
		t.Fatalf("delete consumer: %v", err)
	}
	deleted := time.Now()
	during := <-sending
	testwait.For(t, 5*time.Second-time.Since(deleted), "node a's consumer recreated and ready", func() bool {
		return consumerExists(t, a.JetStream(), "a") && readyStatus(t, a) == http.StatusOK
	})
	// Live again: a message from node b reaches alice through a's new consumer.
	after := bob.sendN(t, chat, "after", 3, 10*time.Millisecond)
	alice.reconcile(t, chat, 1, idsAfter(0, before, during, after), 5*time.Second)
	if n := alice.c.Stats().Connects; n < 2 {
		t.Errorf("alice connected %d times, want a reconnect (her session was resynced)", n)
	}
	if got := a.metric(t, "chatd_push_consumer_lost_total"); got < 1 {
		t.Errorf("chatd_push_consumer_lost_total = %v, want ≥ 1", got)
	}
}

// No `hello` before the node's consumer exists (DeliverNew would skip what
// was published in between). Here node a's consumer is deleted and a
// foreign consumer of the same name, which a node cannot take over, holds
// its place: the node stays not ready and refuses WebSockets with 503 until
// the squatter is gone and its own consumer is back.
func TestNoHelloWithoutConsumer(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{Push: push.Config{CheckInterval: 200 * time.Millisecond}}))
	testwait.For(t, 5*time.Second, "node a ready", func() bool { return readyStatus(t, a) == http.StatusOK })
	if st, first, _ := dialStatus(t, a, "alice"); st != 0 || first != "hello" {
		t.Fatalf("healthy node: status %d first frame %q, want hello", st, first)
	}
	js := a.JetStream()
	ctx := context.Background()
	// The node recreates its consumer quickly: delete it again until the
	// squatter wins the name.
	squat := jetstream.ConsumerConfig{
		Durable: "push-a", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	for i := 0; ; i++ {
		if err := js.DeleteConsumer(ctx, stream.DefaultName, "push-a"); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatalf("delete consumer: %v", err)
		}
		_, err := js.CreateConsumer(ctx, stream.DefaultName, squat)
		if err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrConsumerExists) || i == 20 {
			t.Fatalf("create squatter: %v", err)
		}
	}
	testwait.For(t, 10*time.Second, "node a not ready without its consumer", func() bool {
		return readyStatus(t, a) == http.StatusServiceUnavailable
	})
	for range 3 {
		if st, first, code := dialStatus(t, a, "alice"); st != http.StatusServiceUnavailable {
			t.Fatalf("dial without a consumer: status %d first frame %q close %d, want a 503 refusal", st, first, code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := js.DeleteConsumer(ctx, stream.DefaultName, "push-a"); err != nil {
		t.Fatalf("delete squatter: %v", err)
	}
	testwait.For(t, 5*time.Second, "node a ready again", func() bool { return readyStatus(t, a) == http.StatusOK })
	if st, first, _ := dialStatus(t, a, "alice"); st != 0 || first != "hello" {
		t.Fatalf("after recreate: status %d first frame %q, want hello", st, first)
	}
	if !consumerExists(t, js, "a") {
		t.Fatal("hello sent but node a's own consumer does not exist")
	}
}

// A node cut off from NATS for longer than --nats-unreachable turns not
// ready, closes its WebSockets with 1001 and refuses new ones, so its
// clients reconnect to a healthy node; once NATS is back it is ready again.
func TestNodeCutFromNATSClosesSessionsUntilBack(t *testing.T) {
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	u, err := url.Parse(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	p := testproxy.Start(t, u.Host)
	const bound = time.Second
	a := mustRunNode(t, nodeConfig(testpg.NewDatabase(t), p.URL("nats"), "a",
		node.Config{Push: push.Config{Unreachable: bound, CheckInterval: 200 * time.Millisecond}}))
	testwait.For(t, 5*time.Second, "node a ready", func() bool { return readyStatus(t, a) == http.StatusOK })
	conn := dialRaw(t, a, "alice")

	p.Cut()
	cut := time.Now()
	_, code := readUntilClose(t, conn, "", bound+3*time.Second)
	if code != websocket.CloseGoingAway {
		t.Fatalf("session closed with %d after the NATS cut, want 1001", code)
	}
	if took := time.Since(cut); took < bound {
		t.Errorf("session closed %v after the cut, before the %v bound", took, bound)
	}
	if st := readyStatus(t, a); st != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d while cut off, want 503", st)
	}
	if st, first, code := dialStatus(t, a, "alice"); st != http.StatusServiceUnavailable {
		t.Fatalf("dial while cut off: status %d first frame %q close %d, want a 503 refusal", st, first, code)
	}

	p.Restore()
	testwait.For(t, 10*time.Second, "node a ready after NATS is back", func() bool { return readyStatus(t, a) == http.StatusOK })
	if st, first, _ := dialStatus(t, a, "alice"); st != 0 || first != "hello" {
		t.Fatalf("after restore: status %d first frame %q, want hello", st, first)
	}
}
