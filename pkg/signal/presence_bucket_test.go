package signal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Short times, inside the server's 1 s minimum for a message's TTL.
const (
	testTTL     = 2 * time.Second
	testRefresh = 400 * time.Millisecond
)

// presenceNode is one node's Presence on its own connection to a shared
// server, with what it delivered.
type presenceNode struct {
	p       *Presence
	nc      *nats.Conn
	signals chan chatd.Signal
	stop    func() // cancels Run and waits for it
}

// connectJS is a JetStream on a connection of its own to srv, closed when
// the test ends.
func connectJS(t testing.TB, srv *embedded.NATS) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := testnats.Connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// startPresenceNode starts node id's Presence on srv; opts adjust its
// config.
func startPresenceNode(t testing.TB, srv *embedded.NATS, id string, opts ...func(*PresenceConfig)) *presenceNode {
	t.Helper()
	nc, js := connectJS(t, srv)
	n := &presenceNode{nc: nc, signals: make(chan chatd.Signal, 1024)}
	cfg := PresenceConfig{
		JS: js, NodeID: id, TTL: testTTL, Refresh: testRefresh,
		Contacts: func(context.Context, string, int) ([]string, error) { return []string{"watcher"}, nil },
		// The watcher sees everyone.
		ContactsAmong: func(_ context.Context, _ string, among []string, _ int) ([]string, error) { return among, nil },
		Deliver:       func(s chatd.Signal) { n.signals <- s },
	}
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	n.p, err = NewPresence(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = n.p.Run(ctx) }()
	var once sync.Once
	n.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(n.stop)
	return n
}

// waitPresence waits up to within for a signal of user in state online.
func (n *presenceNode) waitPresence(t testing.TB, within time.Duration, user string, online bool) chatd.Signal {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case s := <-n.signals:
			if s.Kind == chatd.SignalPresence && s.User == user && s.Online == online {
				return s
			}
		case <-deadline:
			t.Fatalf("no presence signal of %s online=%v within %v", user, online, within)
		}
	}
}

// bucket opens the presence bucket on its own connection.
func bucket(t testing.TB, srv *embedded.NATS) jetstream.KeyValue {
	t.Helper()
	_, js := connectJS(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		kv, err := js.KeyValue(ctx, DefaultPresenceBucket)
		if err == nil {
			return kv
		}
		if ctx.Err() != nil {
			t.Fatalf("presence bucket: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitKey waits until key's presence in the bucket is want.
func waitKey(t testing.TB, kv jetstream.KeyValue, key string, want bool, within time.Duration) jetstream.KeyValueEntry {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		e, err := kv.Get(context.Background(), key)
		switch {
		case err == nil && want:
			return e
		case errors.Is(err, jetstream.ErrKeyNotFound) && !want:
			return nil
		case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
			t.Fatalf("get %s: %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %s present=%v after %v, want %v", key, !want, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A user's entry is written once per session, not refreshed: only the
// node's heartbeat is. A node that dies without a goodbye (its NATS
// connection gone) takes its users offline for the others when its
// heartbeat lapses, last seen at its last beat, and the surviving node
// deletes the dead node's entries so the bucket does not keep them.
func TestPresenceNodeDiesWithoutGoodbye(t *testing.T) {
	srv := testnats.Start(t)
	a := startPresenceNode(t, srv, "a")
	b := startPresenceNode(t, srv, "b")
	kv := bucket(t, srv)

	b.p.Connected("bob")
	a.waitPresence(t, 2*time.Second, "bob", true)
	entry := waitKey(t, kv, "u.bob.b", true, 2*time.Second)
	beat := waitKey(t, kv, "n.b", true, 2*time.Second)

	time.Sleep(4 * testRefresh)
	if e := waitKey(t, kv, "u.bob.b", true, 0); e.Revision() != entry.Revision() {
		t.Errorf("bob's entry rewritten (revision %d -> %d) though his session did not change: entries must not be refreshed", entry.Revision(), e.Revision())
	}
	if e := waitKey(t, kv, "n.b", true, 0); e.Revision() <= beat.Revision() {
		t.Errorf("node b's heartbeat not rewritten in %v (revision %d), want a beat every %v", 4*testRefresh, e.Revision(), testRefresh)
	}

	b.nc.Close() // b dies: no withdraw reaches the bucket
	died := time.Now()
	s := a.waitPresence(t, testTTL+2*time.Second, "bob", false)
	if since := time.Since(died); since < testTTL-testRefresh {
		t.Errorf("bob offline %v after node b died, before its heartbeat could lapse (TTL %v)", since, testTTL)
	}
	// Node a dates a beat when it sees it: one that b wrote as it died may
	// be seen a moment after. A last_seen of when a noticed the death would
	// be a TTL after it.
	if s.LastSeen.IsZero() || s.LastSeen.After(died.Add(testRefresh)) || died.Sub(s.LastSeen) > testRefresh+time.Second {
		t.Errorf("bob last seen %v, want node b's last beat, at most %v before it died at %v (or seen just after)", s.LastSeen, testRefresh, died)
	}
	waitKey(t, kv, "u.bob.b", false, 3*time.Second)
	if p, err := a.p.Lookup(context.Background(), "watcher", []string{"bob"}); err != nil || p[0].Online {
		t.Errorf("lookup bob on a: %+v %v, want offline", p, err)
	}
}

// A node that stops cleanly deletes its heartbeat and entries: its users
// go offline for the others at once, not after the TTL.
func TestPresenceShutdownWithdraws(t *testing.T) {
	srv := testnats.Start(t)
	a := startPresenceNode(t, srv, "a")
	b := startPresenceNode(t, srv, "b")
	kv := bucket(t, srv)
	for i := range 300 { // more than one pipelined window
		b.p.Connected(fmt.Sprintf("u%d", i))
	}
	seen := make(map[string]bool)
	for deadline := time.After(3 * time.Second); len(seen) < 300; {
		select {
		case s := <-a.signals:
			if s.Online {
				seen[s.User] = true
			}
		case <-deadline:
			t.Fatalf("%d of 300 users online on node a after 3 s", len(seen))
		}
	}
	stopped := time.Now()
	b.stop()
	a.waitPresence(t, testTTL/2, "u0", false)
	if since := time.Since(stopped); since >= testTTL {
		t.Errorf("offline %v after a clean stop, want before the TTL (%v)", since, testTTL)
	}
	waitKey(t, kv, "n.b", false, time.Second)
	for i := range 300 {
		waitKey(t, kv, fmt.Sprintf("u.u%d.b", i), false, time.Second)
	}
}

// An entry of this node deleted while its user is still connected (another
// node took this one for dead while it was cut off, and cleaned up) is put
// back; and a node restarted under the same id does not count its previous
// run's entries, which are deleted.
func TestPresenceRepairsAndCleansItsOwnEntries(t *testing.T) {
	srv := testnats.Start(t)
	a := startPresenceNode(t, srv, "a")
	kv := bucket(t, srv)
	a.p.Connected("alice")
	a.p.Connected("carol")
	first := waitKey(t, kv, "u.alice.a", true, 2*time.Second)
	waitKey(t, kv, "u.carol.a", true, 2*time.Second)
	if err := kv.Purge(context.Background(), "u.alice.a"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		e, err := kv.Get(context.Background(), "u.alice.a")
		if err == nil && e.Revision() > first.Revision() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's entry not put back after it was deleted under her live session: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Node a dies and comes back as a new run where only alice connects:
	// carol's entry, from the old run, goes.
	a.nc.Close()
	a.stop()
	a2 := startPresenceNode(t, srv, "a")
	a2.p.Connected("alice")
	waitKey(t, kv, "u.carol.a", false, testTTL+3*time.Second)
	if e := waitKey(t, kv, "u.alice.a", true, 0); string(e.Value()) != a2.p.inc {
		t.Errorf("alice's entry names run %q, want the new run %q", e.Value(), a2.p.inc)
	}
	p, err := a2.p.Lookup(context.Background(), "watcher", []string{"alice", "carol"})
	if err != nil || !p[0].Online || p[1].Online {
		t.Errorf("lookup on the new run: %+v %v, want alice online, carol offline", p, err)
	}
	if n := counter(t, a2.p.metrics.writeErrors); n != 0 {
		t.Errorf("write errors on the new run: %v, want 0", n)
	}
}

// A put that fails while the watch lives on (here the bucket refuses new
// keys, as it cannot take writes during a leader election) is retried: the
// user's entry is written once the bucket takes writes again, and the user
// goes online for the others, though nothing else rewrites an entry while
// its session lasts.
func TestPresenceRetriesFailedWrites(t *testing.T) {
	srv := testnats.Start(t)
	a := startPresenceNode(t, srv, "a")
	kv := bucket(t, srv)
	a.p.Connected("bob")
	a.waitPresence(t, 2*time.Second, "bob", true)

	ctx := context.Background()
	_, admin := connectJS(t, srv)
	// full caps the bucket at the messages it holds (a new key is refused:
	// the bucket discards new messages), or lifts the cap.
	full := func(on bool) {
		t.Helper()
		st, err := admin.Stream(ctx, "KV_"+DefaultPresenceBucket)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg := info.Config
		cfg.MaxMsgs = -1
		if on {
			cfg.MaxMsgs = int64(info.State.Msgs)
		}
		if _, err := admin.UpdateStream(ctx, cfg); err != nil {
			t.Fatalf("limit the bucket to %d messages: %v", cfg.MaxMsgs, err)
		}
	}
	// The heartbeat, a rewrite of its one key, still goes into a full bucket.
	full(true)
	a.p.Connected("carol")
	deadline := time.Now().Add(3 * time.Second)
	for counter(t, a.p.metrics.writeErrors) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("carol's put did not fail in a full bucket: the test no longer fails a write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitKey(t, kv, "u.carol.a", false, 0)

	full(false)
	a.waitPresence(t, 2*presenceRetry+time.Second, "carol", true)
	waitKey(t, kv, "u.carol.a", true, time.Second)
}

// When the watch (re)starts, as it does after NATS failed it, the node
// puts the entries of its run that the bucket lacks and leaves alone the
// ones it holds: rewriting all would cost a write per local user, and a
// watch update per user on every node, at each restart.
func TestPresenceWatchRestartPutsOnlyMissingEntries(t *testing.T) {
	srv := testnats.Start(t)
	_, js := connectJS(t, srv)
	p, err := NewPresence(PresenceConfig{
		JS: js, NodeID: "a", TTL: testTTL, Refresh: testRefresh,
		Contacts: func(context.Context, string, int) ([]string, error) { return nil, nil },
		Deliver:  func(chatd.Signal) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: p.cfg.Bucket, History: 1, Storage: jetstream.MemoryStorage, LimitMarkerTTL: p.markerTTL()})
	if err != nil {
		t.Fatal(err)
	}
	// The state a restarted watch finds: alice's entry of this run was put
	// by the watch before, bob's put failed. Both are connected here (set
	// directly: Connected would queue their writes as for a new session).
	held, err := kv.Put(ctx, "u.alice.a", []byte(p.inc))
	if err != nil {
		t.Fatal(err)
	}
	p.local["alice"], p.local["bob"] = true, true
	// Carol's session starts as the watch does: her entry is pending, and
	// must be written once, not also as one the bucket lacks.
	p.Connected("carol")
	carol, err := kv.Watch(ctx, "u.carol.a", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopWatch(carol) })

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitKey(t, kv, "u.bob.a", true, 3*time.Second)
	if e := waitKey(t, kv, "u.alice.a", true, 0); e.Revision() != held {
		t.Errorf("alice's entry rewritten at the watch's start (revision %d -> %d) though the bucket held it", held, e.Revision())
	}
	puts := 0
	settle := time.After(3 * testRefresh)
count:
	for {
		select {
		case e := <-carol.Updates():
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				puts++
			}
		case <-settle:
			break count
		}
	}
	if puts != 1 {
		t.Errorf("carol's entry written %d times, want once", puts)
	}
}

// counter is a Prometheus counter's value.
func counter(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// BenchmarkPresencePutAll is the put of 10,000 local users' entries that a
// node makes when its watch (re)starts; a node's steady cost is one
// heartbeat per Refresh whatever its users.
func BenchmarkPresencePutAll(b *testing.B) {
	js := testnats.JetStream(b)
	p, err := NewPresence(PresenceConfig{
		JS: js, NodeID: "n1",
		Contacts: func(context.Context, string, int) ([]string, error) { return nil, nil },
		Deliver:  func(chatd.Signal) {},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{
		Bucket: p.cfg.Bucket, History: 1, Storage: jetstream.MemoryStorage, LimitMarkerTTL: p.markerTTL()}); err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		p.local[fmt.Sprintf("u%d", i)] = true
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		p.putAll(ctx, p.unqueued())
	}
}

// A heartbeat that cannot be written is logged with what it puts at stake
// (the node's users go offline after the TTL) and where to look.
func TestPresenceSaysWhatAFailedHeartbeatRisks(t *testing.T) {
	srv := testnats.Start(t)
	var logs testlog.Buffer
	a := startPresenceNode(t, srv, "a", func(c *PresenceConfig) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	a.p.Connected("bob")
	a.waitPresence(t, 2*time.Second, "bob", true)
	_, admin := connectJS(t, srv)
	if err := admin.DeleteStream(context.Background(), "KV_"+DefaultPresenceBucket); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * testRefresh)
	for !strings.Contains(logs.String(), "heartbeat") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := logs.String()
	if !strings.Contains(got, "if none succeeds within the TTL the cluster takes its users offline") || !strings.Contains(got, "ttl=2s") {
		t.Errorf("a heartbeat into a deleted bucket logged:\n%s\nwant what a lapse costs and the TTL", got)
	}
}
