package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/webhook"
)

// notifySink records the notify events an endpoint receives, checking each
// request's signature.
type notifySink struct {
	t   *testing.T
	key []byte

	mu  sync.Mutex
	got []chatd.Notification
	ids map[string]int
	// events counts the chat events (not notify) that came too.
	events int
}

func (s *notifySink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, body := readSigned(s.t, s.key, r)
	var typ struct{ Type string }
	if err := json.Unmarshal(body, &typ); err != nil {
		s.t.Errorf("request %s: %v", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if typ.Type != "chat.notify" {
		s.events++ // an event or a chat change
		return
	}
	var p webhook.NotifyPayload
	if err := json.Unmarshal(body, &p); err != nil {
		s.t.Errorf("request %s: %v", id, err)
	}
	if p.Data.ID != id {
		s.t.Errorf("notification %s came under webhook-id %s", p.Data.ID, id)
	}
	if s.ids[id]++; s.ids[id] == 1 {
		s.got = append(s.got, p.Data)
	}
}

func (s *notifySink) notifications() []chatd.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// A group of five, alice writing: bob is online and acks, carol is offline,
// dave is online and never acks, erin is online, never acks, but reads the
// chat before the window ends. Three messages in a burst: carol and dave get
// one notification each, counting three; bob and erin get none. A message
// after the window is a window of its own, with the unread counts grown.
func TestOfflineNotifications(t *testing.T) {
	key := testWhsecKey(t)
	sink := &notifySink{t: t, key: key, ids: map[string]int{}}
	url := serveEndpoint(t, sink)
	const window = 3 * time.Second
	cfg := node.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), DatabaseURL: testpg.NewDatabase(t), JWTSecret: opsSecret, NodeID: "notify-1",
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: url, Secret: testWhsec}}},
		Notify:  notify.Config{After: window, Preview: notify.PreviewText},
	}
	n := nodetest.Run(t, cfg)
	base := n.URL()
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	st, chat := restCall(t, http.DefaultClient, base, "alice", "POST", "/api/chats",
		map[string]any{"members": []string{"bob", "carol", "dave", "erin"}})
	if st != http.StatusCreated {
		t.Fatalf("create group: %d %v", st, chat)
	}
	chatID := chat["id"].(string)
	bob, dave, erin := mustWS(t, nil, ws, "bob"), mustWS(t, nil, ws, "dave"), mustWS(t, nil, ws, "erin")

	var ids []string
	for i := range 3 {
		st, out := restCall(t, http.DefaultClient, base, "alice", "POST", "/api/chats/"+chatID+"/messages",
			map[string]any{"cid": fmt.Sprint("c", i), "body": fmt.Sprint("hello ", i)})
		if st != http.StatusCreated {
			t.Fatalf("send %d: %d %v", i, st, out)
		}
		ids = append(ids, out["id"].(string))
	}
	for _, id := range ids {
		bob.waitFor(5*time.Second, "message "+id, func(f map[string]any) bool { return f["type"] == "msg" && f["id"] == id })
		bob.send(map[string]any{"type": "ack", "ids": []string{id}})
	}
	erin.send(map[string]any{"type": "read", "chat": chatID, "upto": ids[2]})
	_ = dave // connected, reading nothing and acking nothing

	// Every window decided: two notified, two skipped.
	testwait.Until(t, "four windows decided", func() bool {
		return nodetest.Metric(t, n.Node, "chatd_notify_sent_total")+nodetest.Metric(t, n.Node, "chatd_notify_skipped_total") >= 4
	})
	if sent := nodetest.Metric(t, n.Node, "chatd_notify_sent_total"); sent != 2 {
		t.Fatalf("chatd_notify_sent_total = %v, want 2 (carol and dave)", sent)
	}
	testwait.Until(t, "both notifications posted", func() bool { return len(sink.notifications()) >= 2 })
	got := sink.notifications()
	slices.SortFunc(got, func(a, b chatd.Notification) int { return strings.Compare(a.User, b.User) })
	if len(got) != 2 || got[0].User != "carol" || got[1].User != "dave" {
		t.Fatalf("notified %v, want carol and dave", got)
	}
	for _, nt := range got {
		if nt.Chat != chatID || nt.Count != 3 || nt.MessageID != ids[2] || nt.Seq != 3 || nt.Sender != "alice" ||
			nt.Text != "hello 2" || nt.Unread != 3 || nt.UnreadTotal != 3 {
			t.Errorf("%s's notification %+v, want chat %s, count 3, the newest message %s (seq 3, alice, \"hello 2\"), unread 3 of 3",
				nt.User, nt, chatID, ids[2])
		}
	}

	// After the window a message is a window of its own: bob acks it,
	// erin this time neither acks nor reads.
	st, out := restCall(t, http.DefaultClient, base, "alice", "POST", "/api/chats/"+chatID+"/messages",
		map[string]any{"cid": "c3", "body": "later"})
	if st != http.StatusCreated {
		t.Fatalf("send later: %d %v", st, out)
	}
	later := out["id"].(string)
	bob.waitFor(5*time.Second, "message "+later, func(f map[string]any) bool { return f["type"] == "msg" && f["id"] == later })
	bob.send(map[string]any{"type": "ack", "ids": []string{later}})
	testwait.Until(t, "eight windows decided", func() bool {
		return nodetest.Metric(t, n.Node, "chatd_notify_sent_total")+nodetest.Metric(t, n.Node, "chatd_notify_skipped_total") >= 8
	})
	testwait.Until(t, "the later message's notifications posted", func() bool { return len(sink.notifications()) >= 5 })
	got = sink.notifications()[2:]
	slices.SortFunc(got, func(a, b chatd.Notification) int { return strings.Compare(a.User, b.User) })
	wantUnread := map[string]int64{"carol": 4, "dave": 4, "erin": 1}
	if len(got) != 3 {
		t.Fatalf("later notifications %+v, want carol's, dave's and erin's", got)
	}
	for _, nt := range got {
		if want, ok := wantUnread[nt.User]; !ok || nt.Count != 1 || nt.Seq != 4 || nt.MessageID != later || nt.Unread != want {
			t.Errorf("later notification %+v, want carol, dave or erin, count 1, seq 4, unread %d", nt, want)
		}
	}
	if sink.events == 0 {
		t.Errorf("the endpoint took every kind but got no chat events")
	}
}

// Two nodes on one NATS and one database: dave acks on node b what alice
// sent through node a, carol is connected to node a and never acks, erin is
// offline. One node decides every window (its election), and dave's acks,
// recorded by b, count there: carol and erin are notified once, dave not.
func TestOfflineNotificationsAcrossNodes(t *testing.T) {
	key := testWhsecKey(t)
	sink := &notifySink{t: t, key: key, ids: map[string]int{}}
	url := serveEndpoint(t, sink)
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	db := testpg.NewDatabase(t)
	cfg := func(id string) node.Config {
		return node.Config{DatabaseURL: db, NATSURL: ns.ClientURL(), JWTSecret: opsSecret, NodeID: id,
			Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: url, Secret: testWhsec, Kinds: []chatd.EventKind{chatd.EventNotify}}}},
			Notify:  notify.Config{After: 3 * time.Second}}
	}
	a, b := nodetest.Run(t, cfg("a")), nodetest.Run(t, cfg("b"))
	ws := func(n *nodetest.Node) string { return "ws" + strings.TrimPrefix(n.URL(), "http") + "/ws" }
	st, chat := restCall(t, http.DefaultClient, a.URL(), "alice", "POST", "/api/chats",
		map[string]any{"members": []string{"carol", "dave", "erin"}})
	if st != http.StatusCreated {
		t.Fatalf("create group: %d %v", st, chat)
	}
	chatID := chat["id"].(string)
	dave, carol := mustWS(t, nil, ws(b), "dave"), mustWS(t, nil, ws(a), "carol")
	_ = carol // connected, acking nothing
	var ids []string
	for i := range 4 {
		st, out := restCall(t, http.DefaultClient, a.URL(), "alice", "POST", "/api/chats/"+chatID+"/messages",
			map[string]any{"cid": fmt.Sprint("c", i), "body": "hi"})
		if st != http.StatusCreated {
			t.Fatalf("send %d: %d %v", i, st, out)
		}
		ids = append(ids, out["id"].(string))
	}
	for _, id := range ids {
		dave.waitFor(5*time.Second, "message "+id, func(f map[string]any) bool { return f["type"] == "msg" && f["id"] == id })
	}
	dave.send(map[string]any{"type": "ack", "ids": ids})
	decided := func() float64 {
		var sum float64
		for _, n := range []*nodetest.Node{a, b} {
			sum += nodetest.Metric(t, n.Node, "chatd_notify_sent_total") + nodetest.Metric(t, n.Node, "chatd_notify_skipped_total")
		}
		return sum
	}
	testwait.Until(t, "three windows decided", func() bool { return decided() >= 3 })
	sa, sb := nodetest.Metric(t, a.Node, "chatd_notify_sent_total"), nodetest.Metric(t, b.Node, "chatd_notify_sent_total")
	if sa+sb != 2 || sa*sb != 0 {
		t.Fatalf("notifications sent by a, b: %v, %v; want 2 by one node", sa, sb)
	}
	testwait.Until(t, "both notifications posted", func() bool { return len(sink.notifications()) >= 2 })
	got := sink.notifications()
	slices.SortFunc(got, func(a, b chatd.Notification) int { return strings.Compare(a.User, b.User) })
	if len(got) != 2 || got[0].User != "carol" || got[1].User != "erin" || got[0].Count != 4 || got[1].Count != 4 {
		t.Fatalf("notified %+v, want carol and erin, 4 messages each", got)
	}
	if got[0].Sender != "alice" || got[0].Text != "" {
		t.Errorf("with the default preview: sender %q, text %q; want alice and no text", got[0].Sender, got[0].Text)
	}
	if sink.events != 0 {
		t.Errorf("an endpoint taking only notify got %d chat events", sink.events)
	}
}

// A node stopped while a window is open gives its messages back; the node
// restarted decides the window: one notification, posted once.
func TestOfflineNotificationSurvivesRestart(t *testing.T) {
	key := testWhsecKey(t)
	sink := &notifySink{t: t, key: key, ids: map[string]int{}}
	url := serveEndpoint(t, sink)
	cfg := node.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), DatabaseURL: testpg.NewDatabase(t), JWTSecret: opsSecret, NodeID: "notify-r",
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: url, Secret: testWhsec}}},
		Notify:  notify.Config{After: 3 * time.Second, AckWait: time.Second},
	}
	n := nodetest.Run(t, cfg)
	st, out := restCall(t, http.DefaultClient, n.URL(), "alice", "POST", "/api/chats/direct", map[string]any{"user": "bob"})
	if st != http.StatusOK && st != http.StatusCreated {
		t.Fatalf("direct chat: %d %v", st, out)
	}
	chatID := out["id"].(string)
	if st, out = restCall(t, http.DefaultClient, n.URL(), "alice", "POST", "/api/chats/"+chatID+"/messages",
		map[string]any{"cid": "c1", "body": "hi"}); st != http.StatusCreated {
		t.Fatalf("send: %d %v", st, out)
	}
	testwait.Until(t, "the notifier holding the message", func() bool {
		return nodetest.Metric(t, n.Node, "chatd_notify_held_messages") == 1
	})
	if err := n.Stop(t); err != nil {
		t.Fatal(err)
	}
	if len(sink.notifications()) != 0 {
		t.Fatalf("notified before the window ended: %+v", sink.notifications())
	}
	n = nodetest.Run(t, cfg)
	testwait.Until(t, "bob's notification", func() bool { return len(sink.notifications()) >= 1 })
	got := sink.notifications()
	if len(got) != 1 || got[0].User != "bob" || got[0].MessageID != out["id"] || got[0].Count != 1 {
		t.Fatalf("notifications %+v, want one for bob of message %v", got, out["id"])
	}
	sink.mu.Lock()
	posts := sink.ids[got[0].ID]
	sink.mu.Unlock()
	if posts != 1 {
		t.Errorf("notification posted %d times, want once", posts)
	}
}
