package forward_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/forward"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const subject = "test.ingest.commit"

var quiet = slog.New(slog.DiscardHandler)

// node is one side of a test cluster: a store on the shared database, a
// Forwarder as its ingest's committer, and what its ingest's OnCommit saw.
type node struct {
	st   *store.Store
	nc   *nats.Conn
	fw   *forward.Forwarder
	in   *ingest.Ingest
	reg  *prometheus.Registry
	stop func() // ends the ingest (it drains and closes)

	mu        sync.Mutex
	committed []store.Accepted
}

// newNode starts a node; tweaks change its Forwarder's config.
func newNode(t *testing.T, dsn string, ns *embedded.NATS, id string, timeout time.Duration, tweaks ...func(*forward.Config)) *node {
	t.Helper()
	st, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	nc := testnats.Connect(t, ns)
	n := &node{st: st, nc: nc, reg: prometheus.NewRegistry()}
	cfg := forward.Config{Conn: nc, Subject: subject, Local: st, NodeID: id, Timeout: timeout, Logger: quiet, Registerer: n.reg}
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	n.fw, err = forward.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.fw.Close)
	n.in, err = ingest.New(ingest.Config{Store: n.fw, Logger: quiet, Registerer: n.reg, OnCommit: func(b []store.Accepted) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.committed = append(n.committed, b...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	n.fw.SetIngest(n.in)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.in.Run(ctx)
	}()
	var once sync.Once
	n.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(n.stop)
	return n
}

func (n *node) batches(path string) float64 { return n.fw.Batches(path) }

// lead makes n the leading node and waits until the server has its
// subscription: Lead only queues it on the connection, and a batch sent
// before it arrives finds no responder and is committed by its own node.
func (n *node) lead(t *testing.T) {
	t.Helper()
	n.fw.Lead(true)
	if err := n.nc.Flush(); err != nil {
		t.Fatalf("flush the leading node's subscription: %v", err)
	}
}

// accepted is n's chatd_ingest_accepted_total.
func (n *node) accepted(t *testing.T) float64 {
	t.Helper()
	return testmetric.Value(t, n.reg, "chatd_ingest_accepted_total")
}

// waitSeen waits until n's OnCommit saw want messages: it runs after the
// senders are answered, so a test that has its answers may be ahead of it.
func (n *node) waitSeen(t *testing.T, want int) []store.Accepted {
	t.Helper()
	testwait.For(t, 5*time.Second, fmt.Sprintf("OnCommit sees %d messages", want), func() bool { return len(n.seen()) >= want })
	return n.seen()
}

func (n *node) seen() []store.Accepted {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]store.Accepted(nil), n.committed...)
}

// sendAll submits n sends by alice in order, without waiting between
// them, and returns their results in that order.
func sendAll(t *testing.T, in *ingest.Ingest, chat, prefix string, n int) []chatd.SendResult {
	t.Helper()
	out := make([]chatd.SendResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d1", CID: fmt.Sprintf("%s%03d", prefix, i), Body: fmt.Sprint("hi ", i)}
		if err := in.Submit(req, func(r chatd.SendResult) { out[i] = r; wg.Done() }); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	wg.Wait()
	return out
}

func twoNodes(t *testing.T, timeout time.Duration) (leader, follower *node, chat string) {
	t.Helper()
	dsn := testpg.NewDatabase(t)
	ns := testnats.Start(t)
	leader, follower = newNode(t, dsn, ns, "n1", timeout), newNode(t, dsn, ns, "n2", timeout)
	c, err := leader.st.CreateGroupChat(context.Background(), "alice", "t", []string{"bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	leader.lead(t)
	return leader, follower, c.ID
}

// A node whose relay stands by has its batches committed by the leading
// node's group commit, in the order it submitted them, and gets back what
// its own fast path and high-water marks need: the outbox id and the
// recipients.
func TestBatchesCommitOnTheLeadingNode(t *testing.T) {
	leader, follower, chat := twoNodes(t, forward.DefaultTimeout)
	res := sendAll(t, follower.in, chat, "f", 60)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("send %d: %v", i, r.Err)
		}
		if r.Message.Seq != int64(i+1) {
			t.Fatalf("send %d got seq %d, want %d: forwarding changed the order", i, r.Message.Seq, i+1)
		}
	}
	if got := follower.batches("forwarded"); got == 0 || follower.batches("fallback") != 0 {
		t.Fatalf("follower batches: forwarded %v, fallback %v; want all forwarded", got, follower.batches("fallback"))
	}
	if got := leader.batches("taken"); got != follower.batches("forwarded") {
		t.Fatalf("leader took %v batches, follower forwarded %v", got, follower.batches("forwarded"))
	}
	// Counted once in the cluster: by the node its client sent it to.
	if f, l := follower.accepted(t), leader.accepted(t); f != 60 || l != 0 {
		t.Fatalf("chatd_ingest_accepted_total: follower %v, leader %v; want 60 and 0", f, l)
	}
	here, there := follower.waitSeen(t, 60), leader.waitSeen(t, 60)
	if len(here) != 60 || len(there) != 60 {
		t.Fatalf("OnCommit saw %d messages on the follower and %d on the leader, want 60 each", len(here), len(there))
	}
	for i, a := range here {
		if !a.Forwarded || a.OutboxID == 0 || len(a.Recipients) != 3 || a.Message.Device != "d1" {
			t.Fatalf("follower's accepted %d: forwarded %v, outbox id %d, recipients %v, device %q; want forwarded with all three",
				i, a.Forwarded, a.OutboxID, a.Recipients, a.Message.Device)
		}
		if l := there[i]; l.Forwarded || l.OutboxID != a.OutboxID || l.Message.ID != a.Message.ID {
			t.Fatalf("leader's accepted %d: %+v, follower's %+v: want the same message, committed on the leader", i, l, a)
		}
	}
}

// What the leading node refuses comes back with its kind and text, and a
// resend is a duplicate of the forwarded original.
func TestRefusalsAndDuplicatesComeBack(t *testing.T) {
	leader, follower, chat := twoNodes(t, forward.DefaultTimeout)
	ctx := context.Background()
	r, err := follower.in.Send(ctx, chatd.SendRequest{Chat: chat, From: "mallory", Device: "d", CID: "m1", Body: "hi"})
	if err != nil || !errors.Is(r.Err, chatd.ErrForbidden) {
		t.Fatalf("a non-member's send: %+v, %v; want ErrForbidden", r, err)
	}
	local, err := leader.in.Send(ctx, chatd.SendRequest{Chat: chat, From: "mallory", Device: "d", CID: "m2", Body: "hi"})
	if err != nil || local.Err.Error() != r.Err.Error() {
		t.Fatalf("the refusal's text: forwarded %q, local %v (%v); want the same", r.Err, local.Err, err)
	}
	first, err := follower.in.Send(ctx, chatd.SendRequest{Chat: chat, From: "bob", Device: "d", CID: "b1", Body: "once"})
	if err != nil || first.Err != nil {
		t.Fatalf("send: %+v, %v", first, err)
	}
	again, err := follower.in.Send(ctx, chatd.SendRequest{Chat: chat, From: "bob", Device: "d", CID: "b1", Body: "once"})
	if err != nil || again.Err != nil || !again.Duplicate || again.Message.ID != first.Message.ID {
		t.Fatalf("resend: %+v, %v; want a duplicate of %s", again, err, first.Message.ID)
	}
	if follower.batches("fallback") != 0 {
		t.Fatalf("%v batches fell back, want none", follower.batches("fallback"))
	}
}

// With no node leading, or the leading node shutting down, a node commits
// its batches itself.
func TestCommitsHereWhenNoNodeTakesTheBatch(t *testing.T) {
	leader, follower, chat := twoNodes(t, forward.DefaultTimeout)
	leader.fw.Lead(false)
	for i, r := range sendAll(t, follower.in, chat, "a", 10) {
		if r.Err != nil || r.Message.Seq != int64(i+1) {
			t.Fatalf("send %d without a leading node: %+v", i, r)
		}
	}
	if follower.batches("fallback") == 0 || follower.batches("forwarded") != 0 {
		t.Fatalf("follower batches: fallback %v, forwarded %v; want every one committed here",
			follower.batches("fallback"), follower.batches("forwarded"))
	}
	for _, a := range follower.waitSeen(t, 10) {
		if a.Forwarded {
			t.Fatalf("%s marked forwarded, but it was committed here", a.Message.ID)
		}
	}

	// The leading node's ingest has stopped (it shuts down) while it still
	// takes batches: its sends are refused as closed, and committed here.
	leader.lead(t)
	leader.stop()
	for i, r := range sendAll(t, follower.in, chat, "b", 10) {
		if r.Err != nil || r.Message.Seq != int64(11+i) {
			t.Fatalf("send %d while the leading node shuts down: %+v", i, r)
		}
	}
	if follower.batches("forwarded") == 0 {
		t.Fatal("no batch was forwarded to the node shutting down")
	}
	if got := len(follower.waitSeen(t, 20)); got != 20 {
		t.Fatalf("OnCommit saw %d messages, want 20", got)
	}
	for _, a := range follower.seen() {
		if a.Forwarded {
			t.Fatalf("%s marked forwarded, but the leading node refused it as closed", a.Message.ID)
		}
	}
}

// A batch the leading node committed but whose answer never came is
// committed here after the timeout, and the store answers with what the
// leading node stored: nothing is stored twice.
func TestAnAnswerLostAfterTheCommitStoresNothingTwice(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := testnats.Start(t)
	follower := newNode(t, dsn, ns, "n2", 300*time.Millisecond)
	other, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	c, err := other.CreateGroupChat(context.Background(), "alice", "t", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	// A leading node that commits what it is sent and then dies before it
	// answers: the request's sends, stored directly, and no reply.
	nc := testnats.Connect(t, ns)
	stored := make(chan []store.Outcome, 1)
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		sends := []store.Send{{SendRequest: chatd.SendRequest{Chat: c.ID, From: "alice", Device: "d1", CID: "x000", Body: "hi 0"},
			ID: "01LOSTANSWER000000000000000", TS: time.Now()}}
		out, err := other.CommitBatch(context.Background(), sends)
		if err != nil {
			t.Errorf("the stand-in leader's commit: %v", err)
		}
		stored <- out
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	res := sendAll(t, follower.in, c.ID, "x", 1)
	orig := <-stored
	if res[0].Err != nil || !res[0].Duplicate || res[0].Message.ID != orig[0].Message.ID || res[0].Message.Seq != 1 {
		t.Fatalf("send after the lost answer: %+v; want a duplicate of %s (seq 1)", res[0], orig[0].Message.ID)
	}
	if got := follower.batches("fallback"); got != 1 {
		t.Fatalf("fallback batches: %v, want 1", got)
	}
}

// A batch that reaches its own node (sent just as that node took the lead)
// is declined at once and committed where it is: taken, it would wait for
// its own chats, which the batch waiting for the answer holds.
func TestOwnBatchIsDeclined(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := testnats.Start(t)
	// Two forwarders under one node id stand for one node's two roles: an
	// hour's timeout, so only the decline can end the wait.
	taker, sender := newNode(t, dsn, ns, "n1", time.Hour), newNode(t, dsn, ns, "n1", time.Hour)
	c, err := taker.st.CreateGroupChat(context.Background(), "alice", "t", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	taker.lead(t)
	for i, r := range sendAll(t, sender.in, c.ID, "o", 5) {
		if r.Err != nil || r.Message.Seq != int64(i+1) {
			t.Fatalf("send %d: %+v", i, r)
		}
	}
	if sender.batches("fallback") == 0 || taker.batches("taken") != 0 {
		t.Fatalf("fallback %v, taken %v; want the batches declined and committed by their own node",
			sender.batches("fallback"), taker.batches("taken"))
	}
}

// A forwarded message's meta is stored byte for byte as the same send
// committed on the leading node itself: the forwarding escapes nothing.
func TestMetaIsStoredAsSent(t *testing.T) {
	leader, follower, chat := twoNodes(t, forward.DefaultTimeout)
	ctx := context.Background()
	for i, meta := range []json.RawMessage{
		json.RawMessage(`{"html":"<b>&amp;</b>","n":1}`),
		// Spaces: PostgreSQL's json type keeps what it is given, so both
		// paths must give it the same (SendRequest.Check's compact form).
		json.RawMessage(`{ "html" : "<b>&amp;</b>",  "n": 1.50 }`),
	} {
		cid := fmt.Sprint("m", i)
		fwd, err := follower.in.Send(ctx, chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: cid + "f", Body: "a <b>", Meta: meta})
		if err != nil || fwd.Err != nil {
			t.Fatalf("forwarded send: %+v, %v", fwd, err)
		}
		local, err := leader.in.Send(ctx, chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: cid + "l", Body: "a <b>", Meta: meta})
		if err != nil || local.Err != nil {
			t.Fatalf("local send: %+v, %v", local, err)
		}
		if string(fwd.Message.Meta) != string(local.Message.Meta) || fwd.Message.Body != local.Message.Body {
			t.Fatalf("forwarded meta %s body %q, committed on the leading node %s body %q: want the same bytes",
				fwd.Message.Meta, fwd.Message.Body, local.Message.Meta, local.Message.Body)
		}
		var stored string
		if err := leader.st.Pool().QueryRow(ctx, `select meta::text from history where cid = $1`, cid+"f").Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored != string(local.Message.Meta) {
			t.Fatalf("stored meta %s, want %s", stored, local.Message.Meta)
		}
	}
}

// A batch the leading node cannot read (a node of another version) is
// declined at once and committed by its own node, not left to its timeout.
func TestUnreadableBatchIsDeclined(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := testnats.Start(t)
	leader := newNode(t, dsn, ns, "n1", time.Hour)
	leader.lead(t)
	nc := testnats.Connect(t, ns)
	m := nats.NewMsg(subject)
	m.Data = []byte(`{"sends": "a format of another version"}`)
	m.Header.Set("Chatd-Node", "n9")
	reply, err := nc.RequestMsg(m, 5*time.Second)
	if err != nil || len(reply.Data) != 0 {
		t.Fatalf("answer to an unreadable batch: %v, %v; want an empty one (declined) at once", reply, err)
	}
	if leader.batches("taken") != 0 {
		t.Fatalf("taken %v, want 0", leader.batches("taken"))
	}
}

// What rides a forwarded batch (push's reports of settling across nodes)
// reaches the leading node with the name of the node that forwarded it,
// and is offered only the room the batch leaves in a NATS message.
func TestRidersGoWithTheBatch(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := testnats.Start(t)
	var mu sync.Mutex
	var rode []string
	var rooms []int
	leader := newNode(t, dsn, ns, "n1", forward.DefaultTimeout, func(c *forward.Config) {
		c.Attached = func(from string, h nats.Header) {
			mu.Lock()
			defer mu.Unlock()
			rode = append(rode, from+": "+h.Get("Test-Rider"))
		}
	})
	follower := newNode(t, dsn, ns, "n2", forward.DefaultTimeout, func(c *forward.Config) {
		c.Attach = func(h nats.Header, room int) {
			mu.Lock()
			defer mu.Unlock()
			rooms = append(rooms, room)
			h.Set("Test-Rider", fmt.Sprint("report ", len(rooms)))
		}
	})
	c, err := leader.st.CreateGroupChat(context.Background(), "alice", "t", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	leader.lead(t)
	for i, r := range sendAll(t, follower.in, c.ID, "r", 1) {
		if r.Err != nil {
			t.Fatalf("send %d: %v", i, r.Err)
		}
	}
	if got := follower.batches("forwarded"); got != 1 {
		t.Fatalf("the follower forwarded %v batches, want 1", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rode) != 1 || rode[0] != "n2: report 1" {
		t.Fatalf("the leading node took %q along with the batch, want [\"n2: report 1\"]", rode)
	}
	if max := int(follower.nc.MaxPayload()); len(rooms) != 1 || rooms[0] <= 0 || rooms[0] >= max-100 {
		t.Fatalf("the rider was offered %v bytes, want what one send's batch leaves of %d less its headers", rooms, max)
	}
}
