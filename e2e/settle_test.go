package e2e_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/push"
)

// singleNode runs a node on the embedded NATS (so its relay keeps settled
// messages out of the stream, node.Config.Relay.SettleWait) and the external
// test database dsn.
func singleNode(t *testing.T, dsn string, base node.Config) *runningNode {
	t.Helper()
	base.Listen = "127.0.0.1:0"
	base.DatabaseURL = dsn
	base.DataDir = t.TempDir()
	base.JWTSecret = testSecret
	base.NodeID = "solo"
	base.Logger = testLogger().With("node", "solo")
	return mustRunNode(t, base)
}

// On one node, messages every recipient connection acked within the settle
// wait never enter the stream; the rest are published. Either way every
// message reaches both clients, and the outbox empties.
func TestSingleNodeKeepsAckedMessagesOutOfTheStream(t *testing.T) {
	rn := singleNode(t, testpg.NewDatabase(t), node.Config{})
	all := exchange(t, rn, 40)

	settled := rn.metric(t, "chatd_relay_settled_total")
	published := rn.metric(t, "chatd_relay_published_total")
	t.Logf("%v of %d messages settled on the node, %v published", settled, len(all), published)
	if settled == 0 {
		t.Fatalf("no message was kept out of the stream (published %v of %d): the relay does not ask push", published, len(all))
	}
	if settled+published != float64(len(all)) {
		t.Fatalf("settled %v + published %v, want every one of the %d messages exactly once", settled, published, len(all))
	}
	if _, last := rn.streamState(t); last != uint64(published) {
		t.Fatalf("stream last seq %d, want the %v published messages", last, published)
	}
}

// A recipient that reads but never acks keeps its messages unsettled: they
// are published after the wait, leased, redelivered and the client is
// abandoned (4000), then recovers everything from history, as with an
// external NATS.
func TestSingleNodeAbandonsAClientThatNeverAcks(t *testing.T) {
	rn := singleNode(t, testpg.NewDatabase(t), node.Config{Push: push.Config{Lease: 500 * time.Millisecond, MaxAttempts: 2}})
	abandonAndRecover(t, rn)
	if got := rn.metric(t, "chatd_relay_published_total"); got < 5 {
		t.Fatalf("published %v messages, want at least the 5 the silent client never acked", got)
	}
}

// With --settle off a single node publishes every message, as a cluster
// does, so the stream (and anything reading it) sees each one.
func TestSingleNodeWithSettleOffPublishesEveryMessage(t *testing.T) {
	rn := singleNode(t, testpg.NewDatabase(t), node.Config{Settle: node.SettleOff})
	all := exchange(t, rn, 20)
	if got := rn.metric(t, "chatd_relay_settled_total"); got != 0 {
		t.Fatalf("settled %v messages with --settle off, want none", got)
	}
	if _, last := rn.streamState(t); last != uint64(len(all)) {
		t.Fatalf("stream last seq %d, want all %d messages published", last, len(all))
	}
}
