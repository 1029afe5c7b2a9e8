package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is one stream on a real NATS server and one real database, shared
// by the deliverers a test starts.
type rig struct {
	ns  *embedded.NATS
	js  jetstream.JetStream
	st  *store.Store
	seq map[string]int64 // next seq per chat
}

func mustRig(t *testing.T) *rig {
	t.Helper()
	return mustRigOn(t, testnats.Start(t))
}

// mustRigOn is mustRig on a server the test started.
func mustRigOn(t *testing.T, ns *embedded.NATS) *rig {
	t.Helper()
	js := mustJS(t, ns)
	ctx := context.Background()
	if _, err := stream.Ensure(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &rig{ns: ns, js: js, st: st, seq: map[string]int64{}}
}

func mustJS(t *testing.T, ns *embedded.NATS) jetstream.JetStream {
	t.Helper()
	return testnats.JetStreamOf(t, testnats.Connect(t, ns))
}

// publish puts the next event of chat on the stream as the relay would.
func (r *rig) publish(t *testing.T, chat string, kind chatd.EventKind) {
	t.Helper()
	r.seq[chat]++
	seq := r.seq[chat]
	id := fmt.Sprintf("%s-%06d", chat, seq)
	e := chatd.Envelope{OutboxID: int64(len(r.seq))<<32 | seq, Device: "d1", Recipients: []string{"alice", "bob"},
		Message: chatd.Message{ID: id, CID: "c" + id, Chat: chat, From: "alice", Body: "hello " + id, Seq: seq,
			TS: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), Kind: kind}}
	if kind == chatd.EventReaction {
		on := true
		e.Message.Target, e.Message.Emoji, e.Message.On = chat+"-000001", "👍", &on
	}
	data, err := codec.EncodeEnvelope(&e)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: stream.SubjectPrefix + chat, Data: data, Header: nats.Header{}}
	msg.Header.Set(nats.MsgIdHdr, id)
	// Retried: on a cluster the client may still be reconnecting, or the
	// stream electing a leader; the duplicate window drops a repeat.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := r.js.PublishMsg(ctx, msg)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish %s: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deliverer is one running Deliverer, standing for one chatd node.
type deliverer struct {
	*webhook.Deliverer
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs a Deliverer for endpoints over its own NATS connection until
// stop or the end of t.
func (r *rig) start(t *testing.T, js jetstream.JetStream, cfg webhook.Config) *deliverer {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.JS, cfg.Stream, cfg.Store, cfg.Registerer = js, stream.DefaultName, storeAdapter{r.st}, reg
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
	}
	if cfg.Standby == 0 {
		cfg.Standby = 100 * time.Millisecond
	}
	d, err := webhook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dd := &deliverer{Deliverer: d, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(dd.done)
		if err := d.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	t.Cleanup(dd.stop)
	return dd
}

func (d *deliverer) stop() {
	d.cancel()
	<-d.done
}

// metric adds up the series of the named metric.
func (d *deliverer) metric(t *testing.T, name string) float64 {
	t.Helper()
	return testmetric.Sum(t, d.reg, name)
}

// storeAdapter is the store as the webhooks see it (pkg/node has its own).
type storeAdapter struct{ s *store.Store }

func (a storeAdapter) TryLock(ctx context.Context, name string) (webhook.Lock, bool, error) {
	l, ok, err := a.s.TryWebhookLock(ctx, name)
	if !ok {
		return nil, false, err
	}
	return l, true, nil
}
func (a storeAdapter) SetAside(ctx context.Context, f chatd.WebhookFailure) (int64, error) {
	return a.s.SetAsideWebhook(ctx, f)
}
func (a storeAdapter) Failures(ctx context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error) {
	return a.s.WebhookFailures(ctx, endpoint, after, limit)
}

func (a storeAdapter) CountFailures(ctx context.Context, endpoint string) (int64, error) {
	return a.s.CountWebhookFailures(ctx, endpoint)
}
func (a storeAdapter) Failure(ctx context.Context, id int64) (chatd.WebhookFailure, error) {
	return a.s.WebhookFailure(ctx, id)
}
func (a storeAdapter) DeleteFailure(ctx context.Context, id int64) error {
	return a.s.DeleteWebhookFailure(ctx, id)
}

// receiver is a webhook endpoint that verifies every request as the
// Standard Webhooks specification says, written here independently of the
// package: HMAC-SHA256 keyed by the base64 after whsec_, over
// "id.timestamp.body", base64, after "v1,".
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	key []byte

	mu   sync.Mutex
	mode string // "ok", "drop" (connection closed), "500"
	// failChat's events are answered 500 whatever the mode.
	failChat string
	got      []delivery
	// byID is the body each webhook-id came with: a duplicate must repeat it.
	byID     map[string]string
	failures int
	changed  chan struct{} // closed and replaced on every request
	// conns counts the TCP connections the sender opened.
	conns atomic.Int64
	// delay holds every answer this long (nanoseconds), before the lock.
	delay atomic.Int64
}

type delivery struct {
	id      string
	payload webhook.Payload
}

func newReceiver(t *testing.T) *receiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(testSecret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, key: key, mode: "ok", byID: map[string]string{}, changed: make(chan struct{})}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) verify(req *http.Request, body []byte) error {
	id, ts, sig := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	if id == "" || ts == "" || sig == "" {
		return fmt.Errorf("missing headers: id %q timestamp %q signature %q", id, ts, sig)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q not within 5 minutes", ts)
	}
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Fields(sig) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("signature %q does not match", sig)
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	time.Sleep(time.Duration(r.delay.Load()))
	r.mu.Lock()
	defer func() {
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	}()
	if err := r.verify(req, body); err != nil {
		r.t.Errorf("receiver: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		r.t.Errorf("receiver: payload: %v", err)
	}
	mode := r.mode
	if r.failChat != "" && p.Data.ChatID == r.failChat {
		mode = "500"
	}
	switch mode {
	case "drop":
		r.failures++
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case "500":
		r.failures++
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	id := req.Header.Get("webhook-id")
	if prev, dup := r.byID[id]; dup && prev != string(body) {
		r.t.Errorf("receiver: webhook-id %s came twice with different bodies", id)
	}
	r.byID[id] = string(body)
	r.got = append(r.got, delivery{id: id, payload: p})
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setMode(m string) {
	r.mu.Lock()
	r.mode = m
	r.mu.Unlock()
}

func (r *receiver) setFailChat(chat string) {
	r.mu.Lock()
	r.failChat = chat
	r.mu.Unlock()
}

// waitUntil waits, request by request, until cond holds (under the lock).
func (r *receiver) waitUntil(t *testing.T, what string, cond func(r *receiver) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		ok, ch := cond(r), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("receiver: %s: not within 30 s", what)
		}
	}
}

// distinct is how many different webhook-ids arrived.
func (r *receiver) distinct() int { return len(r.byID) }

// checkOrder fails t unless, for every chat, the events arrived in seq
// order, each first arrival following the previous seq (duplicates of an
// id seen before are allowed anywhere), and all want events per chat came.
func (r *receiver) checkOrder(t *testing.T, want map[string]int64) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	next := map[string]int64{}
	seen := map[string]bool{}
	for _, d := range r.got {
		if seen[d.id] {
			continue
		}
		seen[d.id] = true
		c := d.payload.Data.ChatID
		next[c]++
		if d.payload.Data.Seq != next[c] {
			t.Fatalf("chat %s: got seq %d, want %d (order broken or event lost)", c, d.payload.Data.Seq, next[c])
		}
	}
	for c, n := range want {
		if next[c] != n {
			t.Errorf("chat %s: got %d events, want %d", c, next[c], n)
		}
	}
}

func jsOf(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func consumerInfo(r *rig, ep webhook.Endpoint) (*jetstream.ConsumerInfo, error) {
	c, err := r.js.Consumer(context.Background(), stream.DefaultName, webhook.ConsumerName(ep.URL))
	if err != nil {
		return nil, err
	}
	return c.Info(context.Background())
}
