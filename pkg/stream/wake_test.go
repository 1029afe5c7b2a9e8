package stream_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/prometheus/client_golang/prometheus"
)

// waitIdle waits until the relay leads and no outbox read happened for
// 200 ms, so that the next round is one a test started.
func waitIdle(t *testing.T, o *countedReads, r *stream.Relay) {
	t.Helper()
	testwait.For(t, 5*time.Second, "relay active", r.Active)
	last, since := o.reads.Load(), time.Now()
	testwait.For(t, 5*time.Second, "relay idle", func() bool {
		if n := o.reads.Load(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 200*time.Millisecond
	})
}

// Another node's commit wakes the leading relay through its announcement
// on WakeSubject (a relay standing by announces what its node commits).
// The leader's own announcements, sent before it led, do not start a
// round: this node hands it its rows (Offer) and wakes it itself, and a
// round started by the announcement would read them back from PostgreSQL.
func TestRelayWakesOnAnotherNodesAnnouncement(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	own, other := mustStore(t, dsn), mustStore(t, dsn)
	nc, js := mustInProcessJS(t)
	chat := mustChat(t, own)
	reg := prometheus.NewRegistry()
	o := &countedReads{Store: own}
	const subject = "test.relay.wake"
	// Only an announcement or Wake can start a round: the poll is an hour.
	leader, _ := startRelay(t, stream.RelayConfig{Outbox: o, JS: js, NodeID: "n1", WakeSubject: subject,
		Registerer: reg, Poll: time.Hour, Standby: 100 * time.Millisecond})
	waitIdle(t, o, leader)
	standby, _ := startRelay(t, stream.RelayConfig{Outbox: other, JS: js, NodeID: "n2", WakeSubject: subject,
		Registerer: prometheus.NewRegistry(), Poll: time.Hour, Standby: time.Hour})

	batch := commitBatch(t, own, chat, 0, 20)
	if err := nc.Publish(subject, []byte("n1")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if got := outboxDepth(t, own); got != 20 {
		t.Fatalf("outbox depth before the hand-off: got %d, want 20 (a round ran on this node's own announcement)", got)
	}
	leader.Offer(batch)
	leader.Wake()
	testwait.For(t, 5*time.Second, "own batch relayed", func() bool { return outboxDepth(t, own) == 0 })
	if mem, table := rows(t, reg, "memory"), rows(t, reg, "table"); mem != 20 || table != 0 {
		t.Fatalf("rows: %v from memory and %v from the table, want 20 and 0", mem, table)
	}

	if standby.Active() {
		t.Fatal("the second relay leads too")
	}
	commitBatch(t, other, chat, 100, 5)
	standby.Wake()
	testwait.For(t, 5*time.Second, "another node's batch relayed on its announcement", func() bool { return outboxDepth(t, own) == 0 })
	if got := rows(t, reg, "table"); got != 5 {
		t.Fatalf("rows from the table: got %v, want another node's 5", got)
	}
}
