package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testproxy"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

// Bounds of TestNodeCutFromNATSOthersKeepDelivering. Before the fix, with
// the relay's node cut off, live delivery stopped on every node for as long
// as the cut lasted, so any bound short of the cut tells fixed from broken.
const (
	// healthyWithin: cut → the first message sent after the cut delivered
	// live between two nodes that still reach NATS. It covers the relay
	// stepping down on the cut node and another node's relay taking over.
	healthyWithin = 10 * time.Second
	// movedWithin: cut → the cut node's client connected to another node
	// (the cut node must notice, turn not ready and close it with 1001).
	movedWithin = 20 * time.Second
	// sendEvery paces each of the four senders (4 × 20 msg/s in all).
	sendEvery = 50 * time.Millisecond
	// maxSends bounds each sender, whatever the test's timing.
	maxSends = 1200
)

// received is one message handed to the application, with when and how.
type received struct {
	id     string
	via    client.Via
	at     time.Time
	sentAt time.Time // from the body, which the sender stamps
}

// timedPeer is a peer (the harness's, so its reconcile applies) that also
// records when and how each message was handed out.
type timedPeer struct {
	*peer
	name string

	tmu  sync.Mutex
	recv []received
}

// mustTimedPeer runs an SDK client for user at the first of urls, moving on
// to the others when it reconnects (client.Config.URLs).
func mustTimedPeer(t *testing.T, user string, chats []string, urls ...string) *timedPeer {
	t.Helper()
	c := newClient(t, urls[0], user, "", func(cfg *client.Config) {
		cfg.URLs = urls[1:]
		cfg.Chats = chats
	})
	ctx, cancel := context.WithCancel(context.Background())
	tp := &timedPeer{peer: &peer{c: c, cancel: cancel, done: make(chan error, 1)}, name: user}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range c.Events() {
			if ev.Kind != client.EventMessage {
				continue
			}
			r := received{id: ev.Message.ID, via: ev.Via, at: time.Now(), sentAt: sentAt(ev.Message.Body)}
			tp.mu.Lock()
			tp.msgs = append(tp.msgs, ev.Message)
			tp.mu.Unlock()
			tp.tmu.Lock()
			tp.recv = append(tp.recv, r)
			tp.tmu.Unlock()
		}
	}()
	go func() {
		err := c.Run(ctx)
		wg.Wait()
		tp.done <- err
	}()
	t.Cleanup(func() { tp.stop(t) })
	return tp
}

// firstLive returns when the first message sent after since reached this
// peer live from someone else, or false.
func (tp *timedPeer) firstLive(since time.Time) (time.Time, bool) {
	tp.tmu.Lock()
	defer tp.tmu.Unlock()
	for _, r := range tp.recv {
		if r.via == client.ViaLive && r.sentAt.After(since) {
			return r.at, true
		}
	}
	return time.Time{}, false
}

// worstLive is the longest send → live hand-out among messages sent after
// since, and how many there were.
func (tp *timedPeer) worstLive(since time.Time) (time.Duration, int) {
	tp.tmu.Lock()
	defer tp.tmu.Unlock()
	var worst time.Duration
	n := 0
	for _, r := range tp.recv {
		if r.via == client.ViaLive && r.sentAt.After(since) {
			worst = max(worst, r.at.Sub(r.sentAt))
			n++
		}
	}
	return worst, n
}

// waitAll waits until the peer has every message of accs in chat, and
// fails naming what is missing (seq, id, accepted at) when it does not.
func (tp *timedPeer) waitAll(t *testing.T, chat string, accs []client.Accepted, within time.Duration) {
	t.Helper()
	var missing []string
	deadline := time.Now().Add(within)
	for {
		have := map[string]bool{}
		for _, m := range tp.log(chat) {
			have[m.ID] = true
		}
		missing = missing[:0]
		for _, a := range accs {
			if !have[a.ID] {
				missing = append(missing, fmt.Sprintf("seq %d id %s (has there: %s)", a.Seq, a.ID, tp.atSeq(chat, a.Seq)))
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	seqs := make([]int64, 0, len(accs))
	for _, a := range accs {
		seqs = append(seqs, a.Seq)
	}
	t.Fatalf("%s lacks %d of %d accepted messages of chat %s after %v (highest accepted seq %d): %v; stats %+v",
		tp.name, len(missing), len(accs), chat, within, slices.Max(seqs), missing, tp.c.Stats())
}

// atSeq describes what the peer was handed at seq of chat, for a failure.
func (tp *timedPeer) atSeq(chat string, seq int64) string {
	var out []string
	for _, m := range tp.log(chat) {
		if m.Seq == seq {
			out = append(out, fmt.Sprintf("id %s cid %s from %s", m.ID, m.CID, m.From))
		}
	}
	tp.tmu.Lock()
	defer tp.tmu.Unlock()
	for _, r := range tp.recv {
		for _, o := range out {
			if strings.Contains(o, r.id) {
				out = append(out, "via "+r.via.String())
			}
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// sentAt reads the send time a sender stamped at the end of a body ("… @<unix ns>").
func sentAt(body string) time.Time {
	i := strings.LastIndexByte(body, '@')
	if i < 0 {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(body[i+1:], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// sender sends to one chat every sendEvery until stopped (at most
// maxSends), stamping each body with its send time; a send waits for a
// connection (the client resends it on the next one).
type sender struct {
	p    *timedPeer
	chat string
	done chan struct{}

	mu   sync.Mutex
	accs []client.Accepted
	errs []error
}

func startSender(t *testing.T, p *timedPeer, chat string, stop <-chan struct{}) *sender {
	t.Helper()
	s := &sender{p: p, chat: chat, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for i := 0; i < maxSends; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cid := fmt.Sprintf("%s-%d", p.name, i)
			acc, err := p.c.SendCID(ctx, chat, cid, fmt.Sprintf("%s %d @%d", p.name, i, time.Now().UnixNano()))
			cancel()
			s.mu.Lock()
			if err != nil {
				s.errs = append(s.errs, fmt.Errorf("send %s: %w", cid, err))
			} else {
				s.accs = append(s.accs, acc)
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(sendEvery):
			}
		}
	}()
	return s
}

// wait waits for the sender to stop and returns what was accepted,
// reporting any failed send on t.
func (s *sender) wait(t *testing.T) []client.Accepted {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(40 * time.Second):
		t.Fatalf("sender %s did not stop", s.p.name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.errs {
		t.Errorf("%s: %v", s.p.name, err)
	}
	return s.accs
}

// ready reports whether the node's /readyz answers 200.
func ready(rn *runningNode) bool {
	resp, err := http.Get(rn.URL() + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Three nodes on one PostgreSQL and one NATS; node a
// holds the relay and reaches NATS through a proxy. Cutting that proxy
// must not stall the cluster: clients of b and c keep getting live
// delivery within seconds (the relay moves off a), and a's client is
// closed, reconnects to another node, and ends with every accepted
// message exactly once, in order. Before the fix, delivery stopped on
// every node for as long as the cut lasted.
func TestNodeCutFromNATSOthersKeepDelivering(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	nu, err := url.Parse(ns.ClientURL())
	if err != nil {
		t.Fatalf("nats url: %v", err)
	}
	proxy := testproxy.Start(t, nu.Host)
	a := mustRunNode(t, nodeConfig(dsn, proxy.URL("nats"), "a", node.Config{}))
	testwait.For(t, 10*time.Second, "node a takes the relay", func() bool { return a.metric(t, "chatd_relay_active") == 1 })
	b := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "b", node.Config{}))
	c := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "c", node.Config{}))
	// Cleanups run last-registered first: reconnect a before the nodes
	// stop, so that a failing run still shuts a down in order.
	t.Cleanup(proxy.Restore)

	// alice starts on a and may move to b or c; bob is on b. dave (b)
	// and carol (c) talk across the two healthy nodes, which only the
	// relay and the stream connect.
	alice := mustTimedPeer(t, "alice", nil, a.URL(), b.URL(), c.URL())
	chatAB := alice.mustDirect(t, "bob")
	alice.c.Track(chatAB)
	bob := mustTimedPeer(t, "bob", []string{chatAB}, b.URL())
	dave := mustTimedPeer(t, "dave", nil, b.URL())
	chatCD := dave.mustDirect(t, "carol")
	dave.c.Track(chatCD)
	carol := mustTimedPeer(t, "carol", []string{chatCD}, c.URL())
	for _, p := range []*timedPeer{alice, bob, carol, dave} {
		p.waitConnected(t, 1)
	}

	stop := make(chan struct{})
	stopOnce := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(stopOnce)
	senders := []*sender{
		startSender(t, alice, chatAB, stop), startSender(t, bob, chatAB, stop),
		startSender(t, dave, chatCD, stop), startSender(t, carol, chatCD, stop),
	}
	start := time.Now()
	testwait.For(t, 10*time.Second, "live delivery across nodes before the cut", func() bool {
		_, okA := alice.firstLive(start)
		_, okC := carol.firstLive(start)
		return okA && okC
	})
	time.Sleep(500 * time.Millisecond)

	proxy.Cut()
	cut := time.Now()
	t.Logf("node a cut off from NATS")

	// The healthy nodes' clients: live delivery resumes within healthyWithin.
	var healthyAt time.Time
	for time.Since(cut) < healthyWithin && healthyAt.IsZero() {
		for _, p := range []*timedPeer{carol, dave} {
			if at, ok := p.firstLive(cut); ok && (healthyAt.IsZero() || at.Before(healthyAt)) {
				healthyAt = at
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if healthyAt.IsZero() {
		t.Errorf("no live delivery between the healthy nodes b and c within %v of cutting node a (relay active a, b, c = %v)",
			healthyWithin, relayActive(t, a, b, c))
	} else {
		t.Logf("cut → first live delivery between healthy nodes: %v (relay active a, b, c = %v)",
			healthyAt.Sub(cut).Round(time.Millisecond), relayActive(t, a, b, c))
	}

	// a's client is closed and comes back on another node.
	testwait.For(t, movedWithin, "alice reconnects after node a is cut off", func() bool { return alice.c.Stats().Connects >= 2 })
	moved := time.Now()
	t.Logf("cut → alice reconnected: %v (node a ready: %v)", moved.Sub(cut).Round(time.Millisecond), ready(a))
	if st := alice.c.Stats(); st.Disconnects[1001] == 0 {
		t.Errorf("alice's disconnects by close code %v, want a 1001 (going away) from the cut node", st.Disconnects)
	}
	testwait.For(t, healthyWithin, "alice gets bob's messages live on her new node", func() bool {
		_, ok := alice.firstLive(moved)
		return ok
	})

	// Everything accepted, on any node, reaches both ends of each chat,
	// before a is reconnected: no loss, no duplicate handed out.
	time.Sleep(time.Second)
	stopOnce()
	var ab, cd [][]client.Accepted
	for i, s := range senders {
		if i < 2 {
			ab = append(ab, s.wait(t))
		} else {
			cd = append(cd, s.wait(t))
		}
	}
	wantAB, wantCD := idsAfter(0, ab...), idsAfter(0, cd...)
	for _, p := range []*timedPeer{alice, bob} {
		p.waitAll(t, chatAB, slices.Concat(ab...), 15*time.Second)
		p.reconcile(t, chatAB, 1, wantAB, time.Second)
	}
	for _, p := range []*timedPeer{carol, dave} {
		p.waitAll(t, chatCD, slices.Concat(cd...), 15*time.Second)
		p.reconcile(t, chatCD, 1, wantCD, time.Second)
	}
	for _, p := range []*timedPeer{alice, bob, carol, dave} {
		worst, n := p.worstLive(cut)
		st := p.c.Stats()
		t.Logf("%s: worst send→live after the cut %v over %d; live %d, history %d, connects %d",
			p.name, worst.Round(time.Millisecond), n, st.DeliveredLive, st.DeliveredHistory, st.Connects)
	}
	t.Logf("accepted: chat a–b %d, chat c–d %d", len(wantAB), len(wantCD))

	// a reconnects, turns ready again and stops in order with the others.
	proxy.Restore()
	testwait.For(t, 20*time.Second, "node a ready again after the link returns", func() bool { return ready(a) })
	testwait.For(t, 15*time.Second, "the PostgreSQL outbox drains", func() bool { return b.outboxDepth(t) == 0 })
	for _, p := range []*timedPeer{alice, bob, carol, dave} {
		if err := p.stop(t); err != nil {
			t.Errorf("client %s: %v", p.name, err)
		}
	}
	for _, rn := range []*runningNode{a, b, c} {
		if err := rn.stop(t); err != nil {
			t.Errorf("node %s: %v", rn.NodeID(), err)
		}
	}
}
