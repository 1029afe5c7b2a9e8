// Package e2e holds chatd's end-to-end fault tests: real nodes (in-process
// through pkg/node, or the chatd binary), real PostgreSQL and real JetStream,
// clients that keep the wire contract, and faults injected from outside
// (a relay killed mid-round, NATS restarted, chatd SIGKILLed, a node
// cancelled). Each test proves its point by reconciliation: every accepted
// message reaches every recipient, live or from history.
package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/stream"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const testSecret = "e2e-shared-secret"

// logEnv, when set, sends node and client logs to stderr at Debug level.
const logEnv = "CHATD_TEST_E2ELOG"

func testLogger() *slog.Logger {
	if os.Getenv(logEnv) == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// mustNATS starts an in-process NATS with JetStream and a TCP listener (a
// node needs a URL), stopped when the test ends.
func mustNATS(t *testing.T, storeDir, listen string) *embedded.NATS {
	t.Helper()
	return nodetest.NATS(t, storeDir, listen)
}

// runningNode is a node whose Run the test owns, with the test's probes.
type runningNode struct{ *nodetest.Node }

// nodeConfig is a node on the external dsn and NATS url, sharing the test
// secret, with base's tuning.
func nodeConfig(dsn, natsURL, id string, base node.Config) node.Config {
	base.Listen = "127.0.0.1:0"
	base.DatabaseURL = dsn
	base.NATSURL = natsURL
	base.JWTSecret = testSecret
	base.NodeID = id
	base.Logger = testLogger().With("node", id)
	return base
}

// mustRunNode starts a node and runs it until stop or the end of the test.
func mustRunNode(t *testing.T, cfg node.Config) *runningNode {
	t.Helper()
	return &runningNode{nodetest.Run(t, cfg)}
}

// stop cancels the node and waits for its orderly shutdown; it is safe to
// call more than once.
func (rn *runningNode) stop(t *testing.T) error {
	t.Helper()
	return rn.Stop(t)
}

// outboxDepth is the PostgreSQL outbox's row count.
func (rn *runningNode) outboxDepth(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := rn.Store.OutboxStats(ctx)
	if err != nil {
		t.Fatalf("outbox stats: %v", err)
	}
	return st.Depth
}

// historyRows counts the history table's rows.
func (rn *runningNode) historyRows(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int64
	if err := rn.Store.Pool().QueryRow(ctx, "SELECT count(*) FROM history").Scan(&n); err != nil {
		t.Fatalf("count history: %v", err)
	}
	return n
}

// streamState returns the delivery stream's message count and last sequence.
func (rn *runningNode) streamState(t *testing.T) (msgs, lastSeq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := rn.JetStream().Stream(ctx, stream.DefaultName)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs, info.State.LastSeq
}

// metric adds up every series of the named metric in the node's registry.
func (rn *runningNode) metric(t *testing.T, name string) float64 {
	t.Helper()
	return nodetest.Metric(t, rn.Node.Node, name)
}

// peer is a running SDK client and the chat log it was handed.
type peer struct {
	c      *client.Client
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error

	mu   sync.Mutex
	msgs []chatd.Message
}

// mustPeer creates and runs an SDK client for user at url (device "" is the
// default device); mod tunes its Config before New. It stops at test end.
func mustPeer(t *testing.T, url, user, device string, mod func(*client.Config)) *peer {
	t.Helper()
	return runPeer(t, newClient(t, url, user, device, mod))
}

// newClient creates an SDK client without running it, so that the test can
// set resume points (TrackFrom) before its first session.
func newClient(t *testing.T, url, user, device string, mod func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{
		URL: url, Token: apitest.Token(t, []byte(testSecret), user, device),
		AckDelay: 10 * time.Millisecond, BackoffMin: 20 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
		DialTimeout: 3 * time.Second, Logger: testLogger().With("user", user),
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

// runPeer runs c and records the messages it hands out until the test ends.
func runPeer(t *testing.T, c *client.Client) *peer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &peer{c: c, cancel: cancel, done: make(chan error, 1)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range c.Events() {
			if ev.Kind == client.EventMessage {
				p.mu.Lock()
				p.msgs = append(p.msgs, ev.Message)
				p.mu.Unlock()
			}
		}
	}()
	go func() {
		err := c.Run(ctx)
		wg.Wait()
		p.done <- err
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop ends the client's Run and returns its error; safe to call twice.
func (p *peer) stop(t *testing.T) error {
	t.Helper()
	p.once.Do(func() {
		p.cancel()
		select {
		case p.err = <-p.done:
		case <-time.After(10 * time.Second):
			t.Fatal("client Run did not return within 10s of its context ending")
		}
	})
	return p.err
}

// log returns a copy of the chat's messages handed out so far.
func (p *peer) log(chat string) []chatd.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []chatd.Message
	for _, m := range p.msgs {
		if m.Chat == chat {
			out = append(out, m)
		}
	}
	return out
}

// waitConnected waits until the client has reached hello at least n times.
func (p *peer) waitConnected(t *testing.T, n int64) {
	t.Helper()
	testwait.For(t, 10*time.Second, "client connected", func() bool { return p.c.Stats().Connects >= n })
}

// mustDirect returns the direct chat between p's user and other.
func (p *peer) mustDirect(t *testing.T, other string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := p.c.Direct(ctx, other)
	if err != nil {
		t.Fatalf("direct chat with %s: %v", other, err)
	}
	return ch.ID
}

// sendN sends n messages from p, gap apart, with cids prefix-0, prefix-1, …
// and returns what was accepted, stopping at the first error (reported on t).
func (p *peer) sendN(t *testing.T, chat, prefix string, n int, gap time.Duration) []client.Accepted {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accs := make([]client.Accepted, 0, n)
	for i := range n {
		acc, err := p.c.SendCID(ctx, chat, fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("%s %d", prefix, i))
		if err != nil {
			t.Errorf("send %s %d: %v", prefix, i, err)
			return accs
		}
		accs = append(accs, acc)
		time.Sleep(gap)
	}
	return accs
}

// idsAfter returns the ids of accs with a seq above after, in seq order.
func idsAfter(after int64, accs ...[]client.Accepted) []string {
	var all []client.Accepted
	for _, a := range accs {
		all = append(all, a...)
	}
	slices.SortFunc(all, func(a, b client.Accepted) int { return cmp.Compare(a.Seq, b.Seq) })
	var ids []string
	for _, a := range all {
		if a.Seq > after {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// reconcile waits until p's log of chat holds every id in want and then
// checks it is the chat's log from seq first on: contiguous, each id once,
// nothing beyond want.
func (p *peer) reconcile(t *testing.T, chat string, first int64, want []string, within time.Duration) {
	t.Helper()
	wantSet := make(map[string]bool, len(want))
	for _, id := range want {
		wantSet[id] = true
	}
	var got []chatd.Message
	deadline := time.Now().Add(within)
	for {
		got = p.log(chat)
		if len(got) >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat %s: recipient has %d of %d accepted messages after %v (stats %+v)",
				chat, len(got), len(want), within, p.c.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	seen := map[string]bool{}
	for i, m := range got {
		if m.Seq != first+int64(i) {
			t.Fatalf("message %d of the log has seq %d, want %d", i, m.Seq, first+int64(i))
		}
		if seen[m.ID] {
			t.Fatalf("message %s (seq %d) handed out twice", m.ID, m.Seq)
		}
		if !wantSet[m.ID] {
			t.Fatalf("message %s (seq %d) was never accepted", m.ID, m.Seq)
		}
		seen[m.ID] = true
	}
	if len(got) != len(want) {
		t.Fatalf("recipient has %d messages, want %d", len(got), len(want))
	}
}
