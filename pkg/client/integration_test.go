package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/push"
)

// The integration tests run the client against a real in-process chatd node
// (real PostgreSQL from testpg, real JetStream), so they check the client's
// side of the bargain against the server's, not against a script.

func TestMain(m *testing.M) { testpg.Main(m) }

const testSecret = "client-integration-secret"

// mustNode starts a chatd node on a fresh database and a private NATS, runs
// it until the test ends, and returns it.
func mustNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	cfg.DatabaseURL = testpg.NewDatabase(t)
	cfg.NATSURL = ns.ClientURL()
	cfg.JWTSecret = testSecret
	cfg.NodeID = "n1"
	return nodetest.Run(t, cfg).Node
}

// collector runs a client and records the messages it hands out.
type collector struct {
	c      *client.Client
	cancel context.CancelFunc
	done   chan error
	read   chan struct{} // closed when the test lets events be read

	mu       sync.Mutex
	msgs     []chatd.Message
	via      map[client.Via]int
	receipts []client.Receipt
}

// mustClient creates a client for user/device; it is not running yet.
func mustClient(t *testing.T, n *node.Node, user, device string, mod func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{
		URL: n.URL(), Token: apitest.Token(t, []byte(testSecret), user, device),
		AckDelay: 10 * time.Millisecond, BackoffMin: 20 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
		Logger: testLogger(),
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

// run starts c and records its messages. With paused, events are not read
// until resume is called. The client is stopped when the test ends.
func run(t *testing.T, c *client.Client, paused bool) *collector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	col := &collector{c: c, cancel: cancel, done: make(chan error, 1), read: make(chan struct{}), via: map[client.Via]int{}}
	if !paused {
		close(col.read)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-col.read
		for ev := range c.Events() {
			if ev.Kind == client.EventReceipt {
				col.mu.Lock()
				col.receipts = append(col.receipts, ev.Receipt)
				col.mu.Unlock()
			}
			if ev.Kind != client.EventMessage {
				continue
			}
			col.mu.Lock()
			col.msgs = append(col.msgs, ev.Message)
			col.via[ev.Via]++
			col.mu.Unlock()
		}
	}()
	go func() {
		err := c.Run(ctx)
		wg.Wait()
		col.done <- err
	}()
	t.Cleanup(func() { col.stop(t) })
	return col
}

func (col *collector) resume() {
	select {
	case <-col.read:
	default:
		close(col.read)
	}
}

// stop ends Run and returns its error; it is safe to call more than once.
func (col *collector) stop(t *testing.T) error {
	t.Helper()
	col.resume()
	col.cancel()
	select {
	case err, ok := <-col.done:
		if ok {
			close(col.done)
		}
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("client Run did not return within 10s of its context ending")
		return nil
	}
}

// messages returns a copy of what chat's events handed out so far.
func (col *collector) messages(chat string) []chatd.Message {
	col.mu.Lock()
	defer col.mu.Unlock()
	var out []chatd.Message
	for _, m := range col.msgs {
		if m.Chat == chat {
			out = append(out, m)
		}
	}
	return out
}

// waitMessages waits until chat has at least want messages handed out.
func (col *collector) waitMessages(t *testing.T, chat string, want int, within time.Duration) []chatd.Message {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := col.messages(chat)
		if len(got) >= want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat %s: got %d messages after %v, want %d (stats %+v)", chat, len(got), within, want, col.c.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkLog fails unless msgs are exactly seqs first..first+len-1 in order,
// each id once, and every id in want appears.
func checkLog(t *testing.T, msgs []chatd.Message, first int64, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for i, m := range msgs {
		if m.Seq != first+int64(i) {
			t.Fatalf("message %d has seq %d, want %d", i, m.Seq, first+int64(i))
		}
		if seen[m.ID] {
			t.Fatalf("message %s (seq %d) handed out twice", m.ID, m.Seq)
		}
		seen[m.ID] = true
	}
	for id := range want {
		if !seen[id] {
			t.Fatalf("accepted message %s never handed out", id)
		}
	}
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d", len(msgs), len(want))
	}
}

func mustDirect(t *testing.T, c *client.Client, other string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := c.Direct(ctx, other)
	if err != nil {
		t.Fatalf("direct chat: %v", err)
	}
	return ch.ID
}

// sendN sends n messages from c and returns their accepted ids.
func sendN(t *testing.T, c *client.Client, chat, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ids := make([]string, 0, n)
	for i := range n {
		acc, err := c.Send(ctx, chat, fmt.Sprintf("%s %d", prefix, i))
		if err != nil {
			t.Errorf("send %s %d: %v", prefix, i, err)
			return ids
		}
		ids = append(ids, acc.ID)
	}
	return ids
}

func TestIntegrationTwoUsersChatBothWays(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "", nil)
	chat := mustDirect(t, alice, "bob")
	bob := mustClient(t, n, "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	alice.Track(chat)
	ac, bc := run(t, alice, false), run(t, bob, false)

	const each = 25
	var wg sync.WaitGroup
	var aIDs, bIDs []string
	wg.Add(2)
	go func() { defer wg.Done(); aIDs = sendN(t, alice, chat, "from alice", each) }()
	go func() { defer wg.Done(); bIDs = sendN(t, bob, chat, "from bob", each) }()
	wg.Wait()
	if t.Failed() {
		return
	}
	want := map[string]bool{}
	for _, id := range append(append([]string{}, aIDs...), bIDs...) {
		want[id] = true
	}
	for _, col := range []*collector{ac, bc} {
		checkLog(t, col.waitMessages(t, chat, 2*each, 10*time.Second), 1, want)
	}
	// Every message was handed out exactly once, however it arrived (live,
	// from the resync, or as the sender's own accepted send).
	time.Sleep(100 * time.Millisecond) // a late duplicate would show up here
	for name, col := range map[string]*collector{"alice": ac, "bob": bc} {
		st := col.c.Stats()
		if sum := st.DeliveredLive + st.DeliveredHistory + st.DeliveredSelf; sum != 2*each {
			t.Errorf("%s: handed out %d messages, want %d (stats %+v)", name, sum, 2*each, st)
		}
		if st.AckedIDs < st.MsgFrames {
			t.Errorf("%s: acked %d ids of %d msg frames (stats %+v)", name, st.AckedIDs, st.MsgFrames, st)
		}
		if got := len(col.messages(chat)); got != 2*each {
			t.Errorf("%s: %d messages handed out, want %d", name, got, 2*each)
		}
	}
}

func TestIntegrationResyncAfterReconnect(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "", nil)
	chat := mustDirect(t, alice, "bob")
	run(t, alice, false)

	bob1 := mustClient(t, n, "bob", "phone", func(c *client.Config) { c.Chats = []string{chat} })
	b1 := run(t, bob1, false)
	first := sendN(t, alice, chat, "before", 5)
	b1.waitMessages(t, chat, len(first), 10*time.Second)
	if err := b1.stop(t); err != nil {
		t.Fatalf("bob's first client Run: %v", err)
	}
	pos, ok := bob1.Position(chat)
	if !ok || pos != int64(len(first)) {
		t.Fatalf("bob's position %d (tracked %v), want %d", pos, ok, len(first))
	}

	missed := sendN(t, alice, chat, "while away", 12)
	bob2 := mustClient(t, n, "bob", "phone", nil)
	bob2.TrackFrom(chat, pos)
	b2 := run(t, bob2, false)
	b2.waitMessages(t, chat, len(missed), 10*time.Second)
	want := map[string]bool{}
	for _, id := range missed {
		want[id] = true
	}
	time.Sleep(100 * time.Millisecond)
	checkLog(t, b2.messages(chat), pos+1, want)
	// What was committed before the session usually comes from history; a
	// delivery the stream had not made yet may arrive live instead.
	if st := bob2.Stats(); st.DeliveredHistory+st.DeliveredLive != int64(len(missed)) || st.DeliveredHistory == 0 {
		t.Errorf("delivered from history %d and live %d, want %d in all, mostly from history (stats %+v)",
			st.DeliveredHistory, st.DeliveredLive, len(missed), st)
	}

	// After the resync it is live again.
	after := sendN(t, alice, chat, "back", 3)
	got := b2.waitMessages(t, chat, len(missed)+len(after), 10*time.Second)
	for _, id := range after {
		want[id] = true
	}
	checkLog(t, got, pos+1, want)
}

func TestIntegrationSupersededStopsRun(t *testing.T) {
	n := mustNode(t, node.Config{})
	old := mustClient(t, n, "carol", "laptop", nil)
	oc := run(t, old, false)
	waitConnected(t, old)

	newer := mustClient(t, n, "carol", "laptop", nil)
	run(t, newer, false)
	select {
	case err := <-oc.done:
		close(oc.done)
		if !errors.Is(err, client.ErrSuperseded) {
			t.Fatalf("old client's Run returned %v, want ErrSuperseded", err)
		}
		var ce *client.CloseError
		if !errors.As(err, &ce) || ce.Code != client.CloseSuperseded {
			t.Fatalf("old client's Run returned %v, want a CloseError with code %d", err, client.CloseSuperseded)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("old client's Run did not return after a newer session of its device connected")
	}
	waitConnected(t, newer)
}

func waitConnected(t *testing.T, c *client.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().Connects == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("client never connected (stats %+v)", c.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A client whose application stops reading Events stops acking; chatd
// closes it (overloaded or abandoned) and, once the application reads
// again, the client resyncs and hands out every message exactly once.
func TestIntegrationStalledReaderRecovers(t *testing.T) {
	n := mustNode(t, node.Config{Push: push.Config{Lease: 500 * time.Millisecond, MaxAttempts: 2, MaxPending: 5}})
	alice := mustClient(t, n, "alice", "", nil)
	chat := mustDirect(t, alice, "dave")
	run(t, alice, false)
	dave := mustClient(t, n, "dave", "", func(c *client.Config) {
		c.Chats = []string{chat}
		c.EventBuffer = 1
	})
	dc := run(t, dave, true)
	waitConnected(t, dave)

	ids := sendN(t, alice, chat, "to a stalled reader", 40)
	// The stalled client cannot see its close until it reads again, so the
	// server's side tells when it was withdrawn.
	deadline := time.Now().Add(10 * time.Second)
	for metricSum(t, n, "chatd_push_withdrawn_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a client that stopped acking was never withdrawn (stats %+v)", dave.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	dc.resume()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	dc.waitMessages(t, chat, len(ids), 15*time.Second)
	time.Sleep(200 * time.Millisecond)
	checkLog(t, dc.messages(chat), 1, want)
	if st := dave.Stats(); st.Disconnects[client.CloseOverloaded]+st.Disconnects[client.CloseAbandoned] == 0 {
		t.Errorf("the stalled client never saw a 4000/4001 close (stats %+v)", st)
	}
}

// metricSum adds up every series of the named metric in n's registry.
func metricSum(t *testing.T, n *node.Node, name string) float64 {
	t.Helper()
	return nodetest.Metric(t, n, name)
}

func testLogger() *slog.Logger {
	if os.Getenv("CHATD_TEST_CLIENTLOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A read receipt goes through the node's group commit of read state: it is
// stored and the other member, connected, gets the receipt.
func TestIntegrationReadReceipt(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "phone", nil)
	ac := run(t, alice, false)
	chat := mustDirect(t, alice, "bob")
	bob := mustClient(t, n, "bob", "phone", func(c *client.Config) { c.Chats = []string{chat} })
	bc := run(t, bob, false)
	waitConnected(t, alice)
	waitConnected(t, bob)
	ids := sendN(t, alice, chat, "read me", 1)
	bc.waitMessages(t, chat, 1, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bob.Read(ctx, chat, ids[0]); err != nil {
		t.Fatalf("read: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ac.mu.Lock()
		got := append([]client.Receipt(nil), ac.receipts...)
		ac.mu.Unlock()
		if len(got) > 0 {
			if got[0].User != "bob" || got[0].Chat != chat || got[0].Upto != ids[0] || got[0].Seq != 1 {
				t.Fatalf("receipt %+v, want bob read %s up to %s (seq 1)", got[0], chat, ids[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice got no receipt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var upto string
	if err := n.Store.Pool().QueryRow(ctx, "SELECT upto_msg_id FROM read_state WHERE user_id = 'bob' AND chat_id = $1", chat).Scan(&upto); err != nil || upto != ids[0] {
		t.Fatalf("stored read state: %q (%v), want %s", upto, err, ids[0])
	}
}

// ListChats hands out the caller's read_seq and unread count with each chat.
func TestIntegrationListChatsUnread(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "phone", nil)
	bob := mustClient(t, n, "bob", "phone", nil)
	chat := mustDirect(t, alice, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ids []string
	for i := range 3 {
		acc, err := alice.PostMessage(ctx, chat, fmt.Sprintf("k%d", i), "hi")
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		ids = append(ids, acc.ID)
	}
	// The read goes straight to the store: this test is about the REST
	// helper, TestIntegrationReadReceipt about the read's way there.
	if _, err := n.Store.MarkRead(ctx, "bob", chat, ids[1]); err != nil {
		t.Fatalf("mark read: %v", err)
	}
	for _, tt := range []struct {
		name                     string
		c                        *client.Client
		lastSeq, readSeq, unread int64
	}{
		{"bob read 2 of 3", bob, 3, 2, 1},
		{"alice never read, all her own", alice, 3, 0, 0},
	} {
		chats, err := tt.c.ListChats(ctx)
		if err != nil {
			t.Fatalf("%s: list chats: %v", tt.name, err)
		}
		if len(chats) != 1 || chats[0].ID != chat {
			t.Fatalf("%s: got %+v, want the one chat %s", tt.name, chats, chat)
		}
		if c := chats[0]; c.LastSeq != tt.lastSeq || c.ReadSeq != tt.readSeq || c.Unread != tt.unread {
			t.Errorf("%s: got last_seq %d read_seq %d unread %d, want %d %d %d",
				tt.name, c.LastSeq, c.ReadSeq, c.Unread, tt.lastSeq, tt.readSeq, tt.unread)
		}
	}
}
