package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMain(m *testing.M) { testpg.Main(m) }

var quiet = slog.New(slog.DiscardHandler)

func mustStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func mustJS(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Ensure(context.Background(), js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	return js
}

// mustInProcessJS starts an in-process NATS server and returns a
// connection to it and its JetStream context with the delivery stream.
func mustInProcessJS(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := testnats.Connect(t, testnats.Start(t))
	return nc, mustJS(t, nc)
}

// runRelay runs a relay until t ends (or stop is called) and returns it.
func runRelay(t *testing.T, s *store.Store, js jetstream.JetStream) (*stream.Relay, func()) {
	t.Helper()
	return startRelay(t, stream.RelayConfig{Outbox: s, JS: js, Poll: 100 * time.Millisecond, Standby: 200 * time.Millisecond})
}

// commit stores n messages from alice in chat and returns their outbox ids.
func commit(t *testing.T, s *store.Store, chat string, from, n int) []int64 {
	t.Helper()
	sends := make([]store.Send, n)
	for i := range sends {
		sends[i] = store.Send{ID: fmt.Sprintf("01TEST%020d", from+i), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: chat, From: "alice", Device: "web", CID: fmt.Sprint("k", from+i), Body: "hi"}}
	}
	out, err := s.CommitBatch(context.Background(), sends)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, o := range out {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		ids[i] = o.OutboxID
	}
	return ids
}

func outboxDepth(t *testing.T, s *store.Store) int64 {
	t.Helper()
	st, err := s.OutboxStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Depth
}

// The relay publishes outbox rows in outbox order, each with Nats-Msg-Id =
// outbox id and the frozen recipients, and deletes them from PostgreSQL.
func TestRelayPublishesInOrderAndEmptiesOutbox(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	chat, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	ids := commit(t, s, chat.ID, 0, 300) // more than one relay batch
	runRelay(t, s, js)
	testwait.For(t, 10*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })

	str, err := js.Stream(context.Background(), stream.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range ids {
		raw, err := str.GetMsg(context.Background(), uint64(i+1))
		if err != nil {
			t.Fatalf("stream seq %d: %v", i+1, err)
		}
		if got := raw.Header.Get(jetstream.MsgIDHeader); got != strconv.FormatInt(want, 10) {
			t.Fatalf("stream seq %d has Nats-Msg-Id %s, want outbox id %d (outbox order)", i+1, got, want)
		}
		var env chatd.Envelope
		if err := json.Unmarshal(raw.Data, &env); err != nil {
			t.Fatal(err)
		}
		if env.OutboxID != want || env.Device != "web" || len(env.Recipients) != 3 || env.Message.Chat != chat.ID {
			t.Fatalf("envelope %d: %+v", i+1, env)
		}
	}
	info, err := str.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(ids)) {
		t.Fatalf("stream holds %d messages, want %d", info.State.Msgs, len(ids))
	}
}

// Exactly one relay per database is active; when it stops, a standby takes
// over and keeps relaying.
func TestOneActiveRelayAndTakeover(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	s1, s2 := mustStore(t, dsn), mustStore(t, dsn)
	_, js := mustInProcessJS(t)
	r1, stop1 := runRelay(t, s1, js)
	testwait.For(t, 5*time.Second, "first relay active", r1.Active)
	r2, _ := runRelay(t, s2, js)
	time.Sleep(500 * time.Millisecond) // more than two standby polls
	if r2.Active() {
		t.Fatal("two relays active on one database")
	}
	chat, err := s1.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s1, chat.ID, 0, 10)
	testwait.For(t, 5*time.Second, "first relay drains", func() bool { return outboxDepth(t, s1) == 0 })
	stop1()
	testwait.For(t, 5*time.Second, "standby takes over", r2.Active)
	commit(t, s1, chat.ID, 10, 10)
	testwait.For(t, 5*time.Second, "standby drains", func() bool { return outboxDepth(t, s1) == 0 })
}

// A NATS outage lets the PostgreSQL outbox grow; when NATS returns it drains
// with nothing lost and nothing published twice.
func TestNATSOutageGrowsOutboxThenDrains(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	dir := t.TempDir()
	port := freePort(t)
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: dir, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js := mustJS(t, nc)
	chat, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, s, js)
	commit(t, s, chat.ID, 0, 20)
	testwait.For(t, 5*time.Second, "drain before the outage", func() bool { return outboxDepth(t, s) == 0 })

	srv.Shutdown()
	commit(t, s, chat.ID, 20, 50)
	time.Sleep(500 * time.Millisecond)
	if d := outboxDepth(t, s); d != 50 {
		t.Fatalf("outbox depth during the outage: %d, want 50 (kept in PostgreSQL)", d)
	}
	srv, err = embedded.StartNATS(embedded.NATSConfig{StoreDir: dir, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	testwait.For(t, 15*time.Second, "drain after NATS returns", func() bool { return outboxDepth(t, s) == 0 })
	str, err := js.Stream(context.Background(), stream.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 70 {
		t.Fatalf("stream holds %d messages after the outage, want 70", info.State.Msgs)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
