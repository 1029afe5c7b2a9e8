package node_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/webhook"
)

// hookSink is an endpoint that records payloads while up and answers 503
// while down.
type hookSink struct {
	mu   sync.Mutex
	up   bool
	got  []webhook.Payload
	seen map[string]bool
}

func (s *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if id := r.Header.Get("webhook-id"); !s.seen[id] {
		s.seen[id] = true
		var p webhook.Payload
		json.Unmarshal(body, &p) //nolint:errcheck // checked by the fields below
		s.got = append(s.got, p)
	}
}

func (s *hookSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// One node on the embedded NATS, where settling would skip the stream for
// messages nobody needed live: with a webhook the stream gets every event,
// the endpoint gets them, and what it refused before a restart arrives
// after it, in order (the consumer is durable).
func TestWebhookOnOneNodeSurvivesRestart(t *testing.T) {
	const secret = "node-webhook-test-secret"
	sink := &hookSink{seen: map[string]bool{}}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	cfg := node.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), DatabaseURL: testpg.NewDatabase(t), JWTSecret: secret, NodeID: "hook-1",
		// Messages only: the direct chat's creation would come as a member
		// change (TestWebhookMemberAndReadChanges).
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: srv.URL, Secret: testWhsec, Kinds: []chatd.EventKind{chatd.EventMessage}}},
			MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxAttempts: 1000,
			// The restart restarts the embedded NATS too, which redelivers
			// the events the node gave back only once their ack wait ran out.
			AckWait: time.Second},
	}
	n := nodetest.Run(t, cfg)
	tok := apitest.Token(t, []byte(secret), "alice", chatd.DefaultDevice)
	var chat struct{ ID string }
	apitest.PostJSON(t, n.URL()+"/api/chats/direct", tok, `{"user":"bob"}`, &chat)
	for i := range 3 {
		apitest.PostJSON(t, n.URL()+"/api/chats/"+chat.ID+"/messages", tok, `{"cid":"m`+string(rune('0'+i))+`","body":"hi"}`, nil)
	}
	testwait.Until(t, "failed attempts while the endpoint is down", func() bool {
		return nodetest.Metric(t, n.Node, "chatd_webhook_failed_attempts_total") >= 3
	})
	if err := n.Stop(t); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	sink.up = true
	sink.mu.Unlock()

	n = nodetest.Run(t, cfg)
	apitest.PostJSON(t, n.URL()+"/api/chats/"+chat.ID+"/messages", tok, `{"cid":"m3","body":"after"}`, nil)
	testwait.Until(t, "all four events", func() bool { return sink.count() == 4 })

	sink.mu.Lock()
	defer sink.mu.Unlock()
	for i, p := range sink.got {
		if p.Data.Seq != int64(i+1) || p.Data.ChatID != chat.ID || p.Type != "chat.message" {
			t.Fatalf("event %d: got %+v, want seq %d of chat %s", i, p.Data, i+1, chat.ID)
		}
	}
}

// Two nodes on one NATS and one database, both configured with the same
// webhook: each event reaches the endpoint once, from one node.
func TestWebhookTwoNodesDeliverOnce(t *testing.T) {
	const secret = "node-webhook-test-secret"
	sink := &hookSink{seen: map[string]bool{}, up: true}
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sink.mu.Lock()
		requests++
		sink.mu.Unlock()
		sink.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	db := testpg.NewDatabase(t)
	hooks := webhook.Config{Endpoints: []webhook.Endpoint{{URL: srv.URL, Secret: testWhsec, Kinds: []chatd.EventKind{chatd.EventMessage}}}}
	a := nodetest.Run(t, node.Config{DatabaseURL: db, NATSURL: ns.ClientURL(), JWTSecret: secret, NodeID: "a", Webhook: hooks})
	b := nodetest.Run(t, node.Config{DatabaseURL: db, NATSURL: ns.ClientURL(), JWTSecret: secret, NodeID: "b", Webhook: hooks})
	tok := apitest.Token(t, []byte(secret), "alice", chatd.DefaultDevice)
	var chat struct{ ID string }
	apitest.PostJSON(t, a.URL()+"/api/chats/direct", tok, `{"user":"bob"}`, &chat)
	for i := range 10 {
		base := []string{a.URL(), b.URL()}[i%2]
		apitest.PostJSON(t, base+"/api/chats/"+chat.ID+"/messages", tok, `{"cid":"m`+string(rune('0'+i))+`","body":"hi"}`, nil)
	}
	testwait.Until(t, "all ten events", func() bool { return sink.count() == 10 })
	testwait.Until(t, "the delivered metrics", func() bool {
		return nodetest.Metric(t, a.Node, "chatd_webhook_delivered_total")+nodetest.Metric(t, b.Node, "chatd_webhook_delivered_total") == 10
	})
	da, db2 := nodetest.Metric(t, a.Node, "chatd_webhook_delivered_total"), nodetest.Metric(t, b.Node, "chatd_webhook_delivered_total")
	if da*db2 != 0 {
		t.Errorf("delivered by a, b: got %v, %v, want one node to deliver all", da, db2)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if requests != 10 {
		t.Fatalf("requests: got %d, want 10 (each event once)", requests)
	}
	for i, p := range sink.got {
		if p.Data.Seq != int64(i+1) {
			t.Fatalf("event %d: got seq %d, want %d", i, p.Data.Seq, i+1)
		}
	}
}
