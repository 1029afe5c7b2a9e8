package e2e_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
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

// With a webhook on one node, every message reaches the stream, for the
// endpoint, and the endpoint gets each one; but those every recipient took
// live go under the taken subjects, which the node's live delivery and the
// notifier do not read: their consumers are handed only the rest.
func TestSingleNodeWithAWebhookKeepsTakenMessagesFromLiveDelivery(t *testing.T) {
	recv, secret := newHookReceiver(t, 0)
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	rn := singleNode(t, testpg.NewDatabase(t), node.Config{Notify: notify.Config{After: 300 * time.Millisecond},
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{
			{URL: srv.URL, Secret: secret, Kinds: []chatd.EventKind{chatd.EventMessage, chatd.EventNotify}}}}})
	all := exchange(t, rn, 40)
	// Two more to carol, who never connects: not taken by everyone, so
	// live delivery and the notifier get them, and carol is notified.
	tok := apitest.Token(t, []byte(testSecret), "alice", chatd.DefaultDevice)
	var chat struct{ ID string }
	apitest.PostJSON(t, rn.URL()+"/api/chats/direct", tok, `{"user":"carol"}`, &chat)
	for _, cid := range []string{"c1", "c2"} {
		var a struct{ ID string }
		apitest.PostJSON(t, rn.URL()+"/api/chats/"+chat.ID+"/messages", tok, `{"cid":"`+cid+`","body":"are you there?"}`, &a)
		all = append(all, a.ID)
	}
	testwait.For(t, 20*time.Second, "the endpoint to get every message", func() bool { return recv.distinct(t) == len(all) })
	testwait.For(t, 10*time.Second, "carol's notification", func() bool { return rn.metric(t, "chatd_notify_sent_total") == 1 })

	taken := rn.metric(t, "chatd_relay_settled_total")
	published := rn.metric(t, "chatd_relay_published_total")
	t.Logf("%v of %d messages taken live by everyone, %v published in all", taken, len(all), published)
	if taken == 0 {
		t.Fatalf("no message went under the taken subjects (published %v of %d)", published, len(all))
	}
	if published != float64(len(all)) {
		t.Fatalf("published %v, want every one of the %d messages: the endpoint needs each", published, len(all))
	}
	if _, last := rn.streamState(t); last != uint64(len(all)) {
		t.Fatalf("stream last seq %d, want all %d messages", last, len(all))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range []string{push.ConsumerName("solo"), notify.ConsumerName} {
		c, err := rn.JetStream().Consumer(ctx, stream.DefaultName, name)
		if err != nil {
			t.Fatalf("consumer %s: %v", name, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := info.Delivered.Consumer, uint64(len(all))-uint64(taken); got != want {
			t.Errorf("consumer %s was handed %d messages, want the %d not taken by everyone", name, got, want)
		}
	}
	if taken > float64(len(all)-2) {
		t.Errorf("%v messages taken, but carol took neither of hers", taken)
	}
}
