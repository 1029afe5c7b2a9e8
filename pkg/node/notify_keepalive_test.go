package node_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The notifier tells JetStream it is still working on a held message
// (an in-progress ack) only once the message has been held a third of the
// ack wait: a message decided sooner needs none, and telling each held
// message at every keep-alive was a burst of thousands of acks at once on a
// busy node. One held longer than the ack wait is told in time and never
// redelivered.
func TestNotifierKeepsAliveOnlyWhatItHoldsLong(t *testing.T) {
	for _, tt := range []struct {
		name           string
		after, ackWait time.Duration
		wantKeptAlive  bool
	}{
		// Windows are decided within about a second, the keep-alive runs
		// every 2 s: no held message is ever 2 s old.
		{"decided soon", 300 * time.Millisecond, 6 * time.Second, false},
		// Windows last longer than the ack wait: without in-progress acks
		// every held message would be redelivered.
		{"held past the ack wait", 4 * time.Second, 3 * time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := testWhsecKey(t)
			sink := &notifySink{t: t, key: key, ids: map[string]int{}}
			url := serveEndpoint(t, sink)
			ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
			nc, err := nats.Connect(ns.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			inProgress := testnats.InProgressAcks(t, nc, notify.ConsumerName)
			n := nodetest.Run(t, node.Config{DatabaseURL: testpg.NewDatabase(t), NATSURL: ns.ClientURL(), JWTSecret: opsSecret, NodeID: "keepalive",
				Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: url, Secret: testWhsec, Kinds: []chatd.EventKind{chatd.EventNotify}}}},
				Notify:  notify.Config{After: tt.after, AckWait: tt.ackWait}})
			st, chat := restCall(t, http.DefaultClient, n.URL(), "alice", "POST", "/api/chats",
				map[string]any{"members": []string{"carol"}})
			if st != http.StatusCreated {
				t.Fatalf("create group: %d %v", st, chat)
			}
			chatID := chat["id"].(string)
			// carol is offline: every message is held for her window. Sent
			// for 5 s, so messages are held across at least two
			// keep-alives.
			for i := range 50 {
				st, out := restCall(t, http.DefaultClient, n.URL(), "alice", "POST", "/api/chats/"+chatID+"/messages",
					map[string]any{"cid": fmt.Sprint("c", i), "body": "hi"})
				if st != http.StatusCreated {
					t.Fatalf("send %d: %d %v", i, st, out)
				}
				time.Sleep(100 * time.Millisecond)
			}
			testwait.Until(t, "carol notified of every message", func() bool {
				var count int
				for _, nt := range sink.notifications() {
					count += nt.Count
				}
				return count >= 50
			})
			switch got := inProgress(); {
			case tt.wantKeptAlive && got == 0:
				t.Fatalf("no in-progress ack from the notifier for messages held %v, past the ack wait of %v", tt.after, tt.ackWait)
			case !tt.wantKeptAlive && got > 0:
				t.Fatalf("%d in-progress acks from the notifier for messages decided within a third of the ack wait of %v", got, tt.ackWait)
			}
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cons, err := js.Consumer(ctx, stream.DefaultName, notify.ConsumerName)
			if err != nil {
				t.Fatal(err)
			}
			info, err := cons.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.NumRedelivered != 0 {
				t.Fatalf("%d held messages redelivered: their ack wait ran out while held", info.NumRedelivered)
			}
		})
	}
}
