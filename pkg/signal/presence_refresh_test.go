package signal

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
)

// newRefreshPresence returns a Presence on a private JetStream with users
// connected locally and its bucket created, without running its loops.
func newRefreshPresence(t testing.TB, users int) (*Presence, jetstream.KeyValue) {
	t.Helper()
	js := testnats.JetStream(t)
	p, err := NewPresence(PresenceConfig{
		JS: js, NodeID: "n1",
		Contacts: func(context.Context, string, int) ([]string, error) { return nil, nil },
		Deliver:  func(chatd.Signal) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{
		Bucket: p.cfg.Bucket, TTL: p.cfg.TTL, History: 1, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	for i := range users {
		p.Connected(fmt.Sprintf("u%d", i))
	}
	return p, kv
}

// The pipelined refresh writes every local user's entry, under the key a
// KV Put writes (the watch and the TTL see it), and restarts its age.
func TestRefreshPutsEveryLocalEntry(t *testing.T) {
	const users = 600 // more than two refresh windows
	p, kv := newRefreshPresence(t, users)
	ctx := context.Background()
	p.refreshAll(ctx)
	first := make(map[string]uint64, users)
	for i := range users {
		key := fmt.Sprintf("u%d.n1", i)
		e, err := kv.Get(ctx, key)
		if err != nil {
			t.Fatalf("entry %s after a refresh: %v", key, err)
		}
		first[key] = e.Revision()
	}
	time.Sleep(10 * time.Millisecond)
	p.refreshAll(ctx)
	for key, rev := range first {
		e, err := kv.Get(ctx, key)
		if err != nil {
			t.Fatalf("entry %s after a second refresh: %v", key, err)
		}
		if e.Revision() <= rev {
			t.Fatalf("entry %s: revision %d after the second refresh, want past %d", key, e.Revision(), rev)
		}
	}
	var m dto.Metric
	if err := p.metrics.writeErrors.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 0 {
		t.Fatalf("write errors: %v, want 0", n)
	}
}

// BenchmarkPresenceRefresh is one refresh of 10,000 local users' entries,
// the cost a node pays every Refresh (2.5 s) with that many users online.
func BenchmarkPresenceRefresh(b *testing.B) {
	p, _ := newRefreshPresence(b, 10000)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		p.refreshAll(ctx)
	}
}
