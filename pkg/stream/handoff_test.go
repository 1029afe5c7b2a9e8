package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// handOutbox is the real store with its reads counted; with no
// RelayConfig.WakeSubject and a long Poll, the test decides when a round
// runs (Wake). failDelete
// fails that many deletes first: a relay killed between publish and delete.
type handOutbox struct {
	countedReads
	byID       atomic.Int64 // calls of ReadOutboxByID
	failDelete atomic.Int64
}

// countedReads is the real store counting the relay's table reads
// (ReadOutbox and ReadOutboxIDs), so a test can tell a round that read the
// table from one served by the hand-off.
type countedReads struct {
	*store.Store
	reads atomic.Int64
}

func (o *countedReads) ReadOutbox(ctx context.Context, limit int) ([]store.OutboxEntry, error) {
	defer o.reads.Add(1)
	return o.Store.ReadOutbox(ctx, limit)
}

func (o *countedReads) ReadOutboxIDs(ctx context.Context, limit int) ([]store.OutboxRef, error) {
	defer o.reads.Add(1)
	return o.Store.ReadOutboxIDs(ctx, limit)
}

func (o *handOutbox) ReadOutboxByID(ctx context.Context, ids []int64) ([]store.OutboxEntry, error) {
	o.byID.Add(1)
	return o.Store.ReadOutboxByID(ctx, ids)
}

func (o *handOutbox) DeleteOutbox(ctx context.Context, ids []int64) (int64, error) {
	if o.failDelete.Add(-1) >= 0 {
		return 0, errors.New("injected: killed before the delete")
	}
	return o.Store.DeleteOutbox(ctx, ids)
}

// handRelay runs a leading relay on s whose rounds run only on Wake (the
// poll is an hour), once its first round (on an empty outbox) is over.
func handRelay(t *testing.T, s *store.Store, js jetstream.JetStream, cfg stream.RelayConfig) (*stream.Relay, *handOutbox, *prometheus.Registry) {
	t.Helper()
	o := &handOutbox{countedReads: countedReads{Store: s}}
	reg := prometheus.NewRegistry()
	cfg.Outbox, cfg.JS, cfg.Registerer = o, js, reg
	cfg.Poll, cfg.Standby = time.Hour, 100*time.Millisecond
	r, _ := startRelay(t, cfg)
	testwait.For(t, 5*time.Second, "relay active and idle", func() bool { return r.Active() && o.reads.Load() > 0 })
	return r, o, reg
}

// commitBatch commits n messages from alice in chat as one batch and
// returns what the commit returns (what ingest hands to OnCommit).
func commitBatch(t *testing.T, s *store.Store, chat string, from, n int) []store.Accepted {
	t.Helper()
	sends := make([]store.Send, n)
	for i := range sends {
		sends[i] = store.Send{ID: fmt.Sprintf("01HAND%020d", from+i), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: chat, From: "alice", Device: "web", CID: fmt.Sprint("h", from+i), Body: fmt.Sprint("hand ", from+i)}}
	}
	out, err := s.CommitBatch(context.Background(), sends)
	if err != nil {
		t.Fatal(err)
	}
	acc := make([]store.Accepted, n)
	for i, o := range out {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		acc[i] = o.Accepted
	}
	return acc
}

func mustChat(t *testing.T, s *store.Store) string {
	t.Helper()
	c, err := s.CreateGroupChat(context.Background(), "alice", "g", []string{"bob", "carol"})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// rows reads chatd_relay_rows_total{source}.
func rows(t *testing.T, reg *prometheus.Registry, source string) float64 {
	t.Helper()
	return testmetric.Value(t, reg, "chatd_relay_rows_total", "source", source)
}

// streamData returns every message of the delivery stream in stream order:
// its Nats-Msg-Id and data.
func streamData(t *testing.T, js jetstream.JetStream) (ids []int64, data [][]byte) {
	t.Helper()
	ctx := context.Background()
	str, err := js.Stream(ctx, stream.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		raw, err := str.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("stream seq %d: %v", seq, err)
		}
		id, err := strconv.ParseInt(raw.Header.Get(jetstream.MsgIDHeader), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids, data = append(ids, id), append(data, raw.Data)
	}
	return ids, data
}

func outboxIDs(batches ...[]store.Accepted) []int64 {
	var ids []int64
	for _, b := range batches {
		for _, a := range b {
			ids = append(ids, a.OutboxID)
		}
	}
	slices.Sort(ids)
	return ids
}

// wantStream fails unless the stream holds exactly want (outbox ids), in
// that order: no gap, no duplicate, outbox order.
func wantStream(t *testing.T, js jetstream.JetStream, want []int64) [][]byte {
	t.Helper()
	got, data := streamData(t, js)
	if !slices.Equal(got, want) {
		t.Fatalf("stream holds Nats-Msg-Ids %v, want %v", got, want)
	}
	return data
}

// A message this node committed and handed over is published from memory,
// not read back, and the stream gets the very bytes a read would have
// produced.
func TestRelayPublishesHeldEntriesWithoutReadingThemBack(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	r, o, reg := handRelay(t, s, js, stream.RelayConfig{})

	batch := commitBatch(t, s, chat, 0, 50)
	fromTable, err := s.ReadOutbox(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	reads := o.reads.Load()
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })

	if got := rows(t, reg, "memory"); got != 50 {
		t.Fatalf("rows from memory: got %v, want 50", got)
	}
	if got, n := rows(t, reg, "table"), o.byID.Load(); got != 0 || n != 0 {
		t.Fatalf("rows from the table: got %v in %d reads by id, want none", got, n)
	}
	if got := o.reads.Load() - reads; got < 1 {
		t.Fatalf("outbox reads after the offer: got %d, want at least the read of ids", got)
	}
	data := wantStream(t, js, outboxIDs(batch))
	for i, e := range fromTable {
		want, err := codec.EncodeEnvelope(&chatd.Envelope{OutboxID: e.ID, Message: e.Message, Device: e.Message.Device, Recipients: e.Recipients})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data[i], want) {
			t.Fatalf("envelope %d from memory:\n%s\nwant what the table gives:\n%s", i, data[i], want)
		}
	}
	if got := metric(t, reg, "chatd_relay_held"); got != 0 {
		t.Fatalf("held after the drain: got %v, want 0", got)
	}
}

// Rows committed by another node (never offered to the leader, and offered
// to a relay that does not lead, which must not keep them) are read from
// the table and published in order.
func TestRelayReadsRowsItWasNotHandedFromTheTable(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	s1, s2 := mustStore(t, dsn), mustStore(t, dsn)
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s1)
	leader, _, reg := handRelay(t, s1, js, stream.RelayConfig{})
	regStandby := prometheus.NewRegistry()
	standby, _ := startRelay(t, stream.RelayConfig{Outbox: s2, JS: js, Poll: time.Hour, Standby: 100 * time.Millisecond, Registerer: regStandby})

	var batches [][]store.Accepted
	for i := range 3 {
		b := commitBatch(t, s2, chat, 100*i, 100)
		standby.Offer(b)
		batches = append(batches, b)
	}
	if standby.Active() {
		t.Fatal("two relays active")
	}
	if got := metric(t, regStandby, "chatd_relay_held"); got != 0 {
		t.Fatalf("a standby relay holds %v entries, want 0", got)
	}
	leader.Wake()
	testwait.For(t, 10*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s1) == 0 })
	if mem, tab := rows(t, reg, "memory"), rows(t, reg, "table"); mem != 0 || tab != 300 {
		t.Fatalf("rows: got %v from memory and %v from the table, want 0 and 300", mem, tab)
	}
	wantStream(t, js, outboxIDs(batches...))
}

// Held and not-held rows interleave: every round publishes them in id
// order, with no gap and no duplicate, whatever the round boundaries.
func TestRelayMixesHeldAndReadRowsInOrder(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	r, o, reg := handRelay(t, s, js, stream.RelayConfig{Batch: 32})

	var all [][]store.Accepted
	offered := 0
	for i := range 7 {
		b := commitBatch(t, s, chat, 20*i, 20)
		if i%2 == 0 {
			r.Offer(b)
			offered += len(b)
		}
		all = append(all, b)
	}
	r.Wake()
	testwait.For(t, 10*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	wantStream(t, js, outboxIDs(all...))
	if mem, tab := rows(t, reg, "memory"), rows(t, reg, "table"); mem != float64(offered) || tab != float64(140-offered) {
		t.Fatalf("rows: got %v from memory and %v from the table, want %d and %d", mem, tab, offered, 140-offered)
	}
	if o.byID.Load() == 0 {
		t.Fatal("the rows not held were never read by id")
	}
}

// The relay holds at most Hold entries; what it drops is read from the
// table, and nothing is lost.
func TestRelayHoldIsBounded(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	r, _, reg := handRelay(t, s, js, stream.RelayConfig{Hold: 10})

	batch := commitBatch(t, s, chat, 0, 50)
	r.Offer(batch)
	if got := metric(t, reg, "chatd_relay_held"); got != 10 {
		t.Fatalf("held: got %v, want the bound 10", got)
	}
	if got := metric(t, reg, "chatd_relay_hold_dropped_total"); got != 40 {
		t.Fatalf("dropped offers: got %v, want 40", got)
	}
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	if mem, tab := rows(t, reg, "memory"), rows(t, reg, "table"); mem != 10 || tab != 40 {
		t.Fatalf("rows: got %v from memory and %v from the table, want 10 and 40", mem, tab)
	}
	wantStream(t, js, outboxIDs(batch))
}

// An entry handed over after its row left the outbox (relayed from the
// table first) is pruned, never published again.
func TestRelayPrunesHeldEntriesNoLongerInTheOutbox(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	r, _, reg := handRelay(t, s, js, stream.RelayConfig{})

	late := commitBatch(t, s, chat, 0, 10)
	r.Wake() // relays them from the table before the offer arrives
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	r.Offer(late)
	fresh := commitBatch(t, s, chat, 10, 5)
	r.Offer(fresh)
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain again", func() bool { return outboxDepth(t, s) == 0 })
	testwait.For(t, 5*time.Second, "stale entries pruned", func() bool { return metric(t, reg, "chatd_relay_held") == 0 })
	wantStream(t, js, outboxIDs(late, fresh))
	if mem := rows(t, reg, "memory"); mem != 5 {
		t.Fatalf("rows from memory: got %v, want the 5 fresh ones", mem)
	}
}

// A relay that published held entries but did not delete them (killed, or
// PostgreSQL gone, between the acks and the delete) republishes them with
// the same Nats-Msg-Id: the stream keeps each once, the outbox empties.
func TestRelayRepublishesHeldEntriesAfterAFailedDelete(t *testing.T) {
	s := mustStore(t, testpg.NewDatabase(t))
	_, js := mustInProcessJS(t)
	chat := mustChat(t, s)
	r, o, reg := handRelay(t, s, js, stream.RelayConfig{})

	o.failDelete.Store(1)
	batch := commitBatch(t, s, chat, 0, 30)
	r.Offer(batch)
	r.Wake()
	testwait.For(t, 5*time.Second, "outbox to drain", func() bool { return outboxDepth(t, s) == 0 })
	if got := rows(t, reg, "memory"); got != 60 {
		t.Fatalf("rows from memory: got %v, want 60 (published, then again after the failed delete)", got)
	}
	wantStream(t, js, outboxIDs(batch))
}
