package stream_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testproxy"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// startRelay runs a relay with cfg (Outbox, JS and a quiet Logger filled in
// by the caller or here) until t ends or stop is called.
func startRelay(t *testing.T, cfg stream.RelayConfig) (*stream.Relay, func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	r, err := stream.NewRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = r.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return r, stop
}

// metric reads the value of the counter or gauge name from reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return testmetric.Value(t, reg, name)
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	str, err := js.Stream(context.Background(), stream.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// item 8b: a row whose envelope NATS can never take (over the server's max
// payload) must not stop the relay for every chat: it is set aside for the
// operator, and the rows after it are relayed.
func TestRelaySetsAsideARowItCannotPublish(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	ctx := context.Background()
	chat, err := s.CreateGroupChat(ctx, "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, chat.ID, 0, 5)
	bad := commit(t, s, chat.ID, 5, 1)[0]
	commit(t, s, chat.ID, 6, 5)
	// Grow the row past NATS's max payload (1 MiB by default) in place: rows
	// accepted before the acceptance bound existed look like this.
	var msgID string
	if err := s.Pool().QueryRow(ctx, `update history set body = repeat('x', 1100000)
		where id = (select history_id from outbox where id = $1) returning msg_id`, bad).Scan(&msgID); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var logs testlog.Buffer
	startRelay(t, stream.RelayConfig{Outbox: s, JS: js, Poll: 100 * time.Millisecond, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	testwait.For(t, 5*time.Second, "outbox to drain past the bad row", func() bool { return outboxDepth(t, s) == 0 })
	if got := streamMsgs(t, js); got != 10 {
		t.Fatalf("stream holds %d messages, want the 10 good rows", got)
	}
	var gotID int64
	var gotChat, gotMsg, reason string
	if err := s.Pool().QueryRow(ctx, `select a.id, h.chat_id, h.msg_id, a.reason from outbox_set_aside a
		join history h on h.id = a.history_id`).Scan(&gotID, &gotChat, &gotMsg, &reason); err != nil {
		t.Fatalf("set-aside row: %v", err)
	}
	if gotID != bad || gotChat != chat.ID || gotMsg != msgID || reason == "" {
		t.Fatalf("set aside: got outbox id %d chat %s msg %s reason %q, want %d %s %s and a reason", gotID, gotChat, gotMsg, reason, bad, chat.ID, msgID)
	}
	if n := metric(t, reg, "chatd_relay_set_aside_total"); n != 1 {
		t.Fatalf("chatd_relay_set_aside_total = %v, want 1", n)
	}
	var logged bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "chat="+chat.ID) &&
			strings.Contains(line, "msg_id="+msgID) && strings.Contains(line, "maximum payload exceeded") {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no ERROR line naming chat %s, message %s and the reason in:\n%s", chat.ID, msgID, logs.String())
	}
}

// recreate makes the delivery stream again after a test deleted it.
func recreate(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	testnats.Recreate(t, func() error {
		_, err := stream.Ensure(context.Background(), js, stream.Config{})
		return err
	})
}

// silence makes the delivery stream unable to answer while the connection
// stays up, the way a stream without a leader is during an election: the
// stream is deleted and a core subscriber swallows its subjects, so a
// publish gets neither an ack nor a "no responders" status. The returned
// function gives the stream back (created again, subscriber gone).
func silence(t *testing.T, nc *nats.Conn, js jetstream.JetStream) (back func()) {
	t.Helper()
	if err := js.DeleteStream(context.Background(), stream.DefaultName); err != nil {
		t.Fatal(err)
	}
	sub, err := nc.Subscribe(stream.SubjectPrefix+">", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() {
		recreate(t, js)
		if err := sub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
	}
}

// item 14: rounds whose publishes are never answered time out and leave no
// outstanding async publish behind, however many of them run; when the
// stream answers again everything is relayed.
func TestRelayTimedOutRoundsLeaveNoPendingPublishes(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	nc, js := mustInProcessJS(t)
	chat, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	back := silence(t, nc, js)
	commit(t, s, chat.ID, 0, 40)
	reg := prometheus.NewRegistry()
	const batch = 16
	r, _ := startRelay(t, stream.RelayConfig{Outbox: s, JS: js, Batch: batch, PublishTimeout: 200 * time.Millisecond,
		Poll: 100 * time.Millisecond, Registerer: reg})

	maxPending := 0
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		maxPending = max(maxPending, js.PublishAsyncPending(), r.PublishAsyncPending())
		time.Sleep(20 * time.Millisecond)
	}
	rounds := metric(t, reg, "chatd_relay_errors_total")
	if rounds < 5 {
		t.Fatalf("%v failed rounds in 2.5 s, want at least 5 (each times out after 200 ms)", rounds)
	}
	if maxPending > batch {
		t.Fatalf("outstanding async publishes reached %d after %v timed-out rounds, want at most one batch (%d)", maxPending, rounds, batch)
	}
	back()
	testwait.For(t, 5*time.Second, "drain after the stream answers again", func() bool { return outboxDepth(t, s) == 0 })
	if got := streamMsgs(t, js); got != 40 {
		t.Fatalf("stream holds %d messages, want 40", got)
	}
	testwait.For(t, time.Second, "no publish left outstanding", func() bool { return r.PublishAsyncPending() == 0 })
}

// item 18a: after the stream could not answer for a while (an election, a
// NATS restart, a cut link), the relay resumes within about a second of it
// answering again: no long backoff and no long publish timeout in the way.
func TestRelayResumesQuicklyWhenTheStreamAnswersAgain(t *testing.T) {
	inProcess := func(t *testing.T) (*nats.Conn, *embedded.NATS) {
		srv := testnats.Start(t)
		return testnats.Connect(t, srv), srv
	}
	for _, tc := range []struct {
		name string
		// start connects to a fresh server and returns what takes the
		// stream away (down) and gives it back (its result).
		start func(t *testing.T) (*nats.Conn, func(js jetstream.JetStream) (back func()))
	}{
		// No stream, as between two leaders: "no responders" at once.
		{"no responders", func(t *testing.T) (*nats.Conn, func(jetstream.JetStream) func()) {
			nc, _ := inProcess(t)
			return nc, func(js jetstream.JetStream) func() {
				if err := js.DeleteStream(context.Background(), stream.DefaultName); err != nil {
					t.Fatal(err)
				}
				return func() { recreate(t, js) }
			}
		}},
		// No answer at all: only the publish timeout ends a round.
		{"no answer", func(t *testing.T) (*nats.Conn, func(jetstream.JetStream) func()) {
			nc, _ := inProcess(t)
			return nc, func(js jetstream.JetStream) func() { return silence(t, nc, js) }
		}},
		// The link to NATS is cut, then restored: the relay wakes on the reconnect.
		{"link cut", func(t *testing.T) (*nats.Conn, func(jetstream.JetStream) func()) {
			srv := testnats.StartListening(t)
			proxy := testproxy.Start(t, srv.Server().Addr().String())
			nc := testnats.Dial(t, proxy.URL("nats"))
			return nc, func(jetstream.JetStream) func() {
				proxy.Cut()
				return proxy.Restore
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustStore(t, testpg.NewDatabase(t))
			nc, down := tc.start(t)
			js := mustJS(t, nc)
			chat, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
			if err != nil {
				t.Fatal(err)
			}
			// Default timeouts and backoff: they are what is measured.
			runRelay(t, s, js)
			commit(t, s, chat.ID, 0, 10)
			testwait.For(t, 5*time.Second, "drain before the outage", func() bool { return outboxDepth(t, s) == 0 })

			back := down(js)
			commit(t, s, chat.ID, 10, 200)
			time.Sleep(3 * time.Second) // long enough for an unbounded backoff to grow
			back()
			start := time.Now()
			testwait.For(t, 10*time.Second, "drain after the stream is back", func() bool { return outboxDepth(t, s) == 0 })
			took := time.Since(start)
			t.Logf("outbox drained %v after the stream answered again", took)
			if took > 3*time.Second {
				t.Fatalf("drained %v after the stream was back, want within ~1 s (bound 3 s on a loaded machine)", took)
			}
			if got := streamMsgs(t, js); got < 200 {
				t.Fatalf("stream holds %d messages after the outage, want at least the 200 committed during it", got)
			}
		})
	}
}

// item 15a: a relay cut off from NATS steps down, so the relay of a node
// that can still reach NATS takes over; the cut-off one reports inactive.
func TestRelayCutOffFromNATSStepsDown(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	sA, sB := mustStore(t, dsn), mustStore(t, dsn)
	srv := testnats.StartListening(t)
	proxy := testproxy.Start(t, srv.Server().Addr().String())
	ncA := testnats.Dial(t, proxy.URL("nats"))
	ncB := testnats.Dial(t, srv.ClientURL())
	jsA, jsB := mustJS(t, ncA), mustJS(t, ncB)
	chat, err := sA.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	regA := prometheus.NewRegistry()
	relayA, _ := startRelay(t, stream.RelayConfig{Outbox: sA, JS: jsA, Poll: 100 * time.Millisecond,
		Standby: 200 * time.Millisecond, StepDownAfter: time.Second, Registerer: regA})
	testwait.For(t, 5*time.Second, "relay A active", relayA.Active)
	relayB, _ := startRelay(t, stream.RelayConfig{Outbox: sB, JS: jsB, Poll: 100 * time.Millisecond,
		Standby: 200 * time.Millisecond, StepDownAfter: time.Second})
	commit(t, sA, chat.ID, 0, 10)
	testwait.For(t, 5*time.Second, "relay A drains", func() bool { return outboxDepth(t, sA) == 0 })

	proxy.Cut()
	commit(t, sA, chat.ID, 10, 10)
	testwait.For(t, 5*time.Second, "relay B to take over from the cut-off relay A", relayB.Active)
	testwait.For(t, 5*time.Second, "relay B drains", func() bool { return outboxDepth(t, sB) == 0 })
	if got := streamMsgs(t, jsB); got != 20 {
		t.Fatalf("stream holds %d messages, want 20", got)
	}
	if relayA.Active() {
		t.Fatal("relay A still reports active while cut off")
	}
	if got := metric(t, regA, "chatd_relay_active"); got != 0 {
		t.Fatalf("relay A: chatd_relay_active = %v, want 0", got)
	}
}

// A full stream (MaxBytes with DiscardNew) is back-pressure, not a bad row
// and not a broken link: nothing is set aside, the relay keeps its lock,
// and the outbox drains once the stream has room.
func TestRelayStreamFullIsBackPressure(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	if _, err := stream.Ensure(context.Background(), js, stream.Config{MaxBytes: 4096}); err != nil {
		t.Fatal(err)
	}
	chat, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, chat.ID, 0, 100)
	reg := prometheus.NewRegistry()
	r, _ := startRelay(t, stream.RelayConfig{Outbox: s, JS: js, Poll: 100 * time.Millisecond,
		Standby: 200 * time.Millisecond, StepDownAfter: 300 * time.Millisecond, Registerer: reg})
	testwait.For(t, 5*time.Second, "the stream to fill", func() bool { return metric(t, reg, "chatd_relay_errors_total") > 0 })
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) { // over three step-down periods
		if !r.Active() {
			t.Fatal("relay stepped down on a full stream: want it to keep the lock (another node would hit the same limit)")
		}
	}
	if n := metric(t, reg, "chatd_relay_set_aside_total"); n != 0 {
		t.Fatalf("chatd_relay_set_aside_total = %v on a full stream, want 0", n)
	}
	if d := outboxDepth(t, s); d == 0 {
		t.Fatal("outbox drained into a full stream")
	}
	if _, err := stream.Ensure(context.Background(), js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "drain once the stream has room", func() bool { return outboxDepth(t, s) == 0 })
	if got := streamMsgs(t, js); got != 100 {
		t.Fatalf("stream holds %d messages, want 100", got)
	}
}

// item 18: a stream without a leader (here: no stream at all, so every
// publish gets "no responders" while the link is up) fails every node's
// relay alike. The relay keeps its lock through it instead of stepping
// down after StepDownAfter, so it publishes the moment the stream answers
// again rather than after a standby hold and another node's lock attempt.
func TestRelayKeepsLockWhileTheStreamHasNoLeader(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	if _, err := stream.Ensure(context.Background(), js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	chat, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r, _ := startRelay(t, stream.RelayConfig{Outbox: s, JS: js, Poll: 100 * time.Millisecond,
		PublishTimeout: 100 * time.Millisecond, Standby: 200 * time.Millisecond,
		StepDownAfter: 300 * time.Millisecond, Registerer: reg})
	testwait.For(t, 5*time.Second, "relay active", r.Active)
	if err := js.DeleteStream(context.Background(), stream.DefaultName); err != nil {
		t.Fatal(err)
	}
	commit(t, s, chat.ID, 0, 10)
	testwait.For(t, 5*time.Second, "publishes to fail", func() bool { return metric(t, reg, "chatd_relay_errors_total") > 0 })
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) { // over three StepDownAfter
		if !r.Active() {
			t.Fatal("relay stepped down while connected to NATS with a leaderless stream: want it to keep the lock (every node fails alike)")
		}
	}
	recreate(t, js)
	start := time.Now()
	testwait.For(t, 5*time.Second, "drain once the stream is back", func() bool { return outboxDepth(t, s) == 0 })
	t.Logf("drained %v after the stream was back", time.Since(start))
	if got := streamMsgs(t, js); got != 10 {
		t.Fatalf("stream holds %d messages, want 10", got)
	}
}
