package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

// sigPeer is a running SDK client that records the signal events (typing,
// receipts, presence) it hands out.
type sigPeer struct {
	c *client.Client

	mu     sync.Mutex
	events []client.Event
}

// mustSigPeer runs a client for user/device at url until the test ends.
func mustSigPeer(t *testing.T, url, user, device string) *sigPeer {
	t.Helper()
	c := newClient(t, url, user, device, nil)
	p := &sigPeer{c: c}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev := range c.Events() {
			if ev.Kind == client.EventTyping || ev.Kind == client.EventReceipt || ev.Kind == client.EventPresence {
				p.mu.Lock()
				p.events = append(p.events, ev)
				p.mu.Unlock()
			}
		}
	}()
	go func() { defer wg.Done(); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	testwait.For(t, 10*time.Second, user+"/"+device+" connected", func() bool { return c.Stats().Connects >= 1 })
	return p
}

// find returns the first recorded event that match accepts.
func (p *sigPeer) find(match func(client.Event) bool) (client.Event, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range p.events {
		if match(ev) {
			return ev, true
		}
	}
	return client.Event{}, false
}

// waitFor waits up to within for an event that match accepts.
func (p *sigPeer) waitFor(t *testing.T, within time.Duration, what string, match func(client.Event) bool) client.Event {
	t.Helper()
	var ev client.Event
	testwait.For(t, within, what, func() bool {
		var ok bool
		ev, ok = p.find(match)
		return ok
	})
	return ev
}

// twoNodes starts nodes a and b on one PostgreSQL and one NATS.
func twoNodes(t *testing.T) (a, b *runningNode) {
	t.Helper()
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a = mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{}))
	b = mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "b", node.Config{}))
	return a, b
}

// Typing and receipts cross nodes: alice types on node a, bob on node b
// sees it within 1 s and alice's laptop on node b does not; bob reads on
// node b and both of alice's devices get the receipt, with its seq, within
// 1 s.
func TestSignalsCrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	alicePhone := mustSigPeer(t, a.URL(), "alice", "phone")
	aliceLaptop := mustSigPeer(t, b.URL(), "alice", "laptop")
	bob := mustSigPeer(t, b.URL(), "bob", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chat, err := alicePhone.c.Direct(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}

	if err := alicePhone.c.Typing(ctx, chat.ID); err != nil {
		t.Fatal(err)
	}
	bob.waitFor(t, time.Second, "bob sees alice typing", func(ev client.Event) bool {
		return ev.Kind == client.EventTyping && ev.Typing == client.Typing{Chat: chat.ID, User: "alice"}
	})

	acc, err := alicePhone.c.Send(ctx, chat.ID, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.c.Read(ctx, chat.ID, acc.ID); err != nil {
		t.Fatal(err)
	}
	want := client.Receipt{Chat: chat.ID, User: "bob", Upto: acc.ID, Seq: acc.Seq}
	for name, p := range map[string]*sigPeer{"alice's phone (node a)": alicePhone, "alice's laptop (node b)": aliceLaptop} {
		p.waitFor(t, time.Second, name+" gets bob's receipt", func(ev client.Event) bool {
			return ev.Kind == client.EventReceipt && ev.Receipt == want
		})
	}
	// By now the typing signal, published before the receipt, has passed
	// through node b: alice's laptop must not have got it.
	if ev, ok := aliceLaptop.find(func(ev client.Event) bool { return ev.Kind == client.EventTyping }); ok {
		t.Errorf("alice's laptop got her own typing: %+v", ev.Typing)
	}
	if ev, ok := bob.find(func(ev client.Event) bool { return ev.Kind == client.EventReceipt }); ok {
		t.Errorf("bob's reading device got his own receipt: %+v", ev.Receipt)
	}
}
