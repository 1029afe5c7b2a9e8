package e2e_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/fasthttp/websocket"
)

// docs/architecture.md, invariant 2, for v2 events: an edit that a
// connected recipient has not acked pins the reclaim floor like a message.
// The message before it, acked, may go; the edit stays in the stream
// through several purge passes until its ack, and then it goes too.
func TestPurgeKeepsAnUnackedEvent(t *testing.T) {
	const gc = 300 * time.Millisecond
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	// A long lease: no redelivery or abandon during the test, so only the
	// missing ack holds the event. --settle off: the acked message goes
	// through the stream too, whose purge this is about.
	rn := mustRunNode(t, nodeConfig(testpg.NewDatabase(t), ns.ClientURL(), "n1",
		node.Config{Settle: node.SettleOff, Reclaim: reclaim.Config{Interval: gc}, Push: push.Config{Lease: time.Minute}}))
	alice := mustPeer(t, rn.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	bob := dialRaw(t, rn, "bob")

	msg := alice.sendN(t, chat, "m", 1, 0)[0]
	got := readMsg(t, bob, chat)
	if got.ID != msg.ID {
		t.Fatalf("bob got %+v first, want message %s", got, msg.ID)
	}
	ack(t, bob, got.ID)

	edit, err := alice.c.Edit(t.Context(), chat, "e1", msg.ID, "edited")
	if err != nil {
		t.Fatalf("edit: %v", err)
	}
	if got := readMsg(t, bob, chat); got.ID != edit.ID {
		t.Fatalf("bob got %+v, want the edit event %s", got, edit.ID)
	}
	testwait.For(t, 10*time.Second, "the outbox empties (both events in the stream)", func() bool { return rn.outboxDepth(t) == 0 })

	testwait.For(t, 10*time.Second, "the acked message is purged", func() bool {
		msgs, _ := rn.streamState(t)
		return msgs == 1
	})
	// Several more purge passes with the edit un-acked: it must stay.
	time.Sleep(4 * gc)
	msgs, last := rn.streamState(t)
	if last != 2 || msgs != 1 {
		t.Fatalf("stream holds %d messages (last seq %d) with the edit un-acked, want exactly the edit (1, last 2)", msgs, last)
	}

	ack(t, bob, edit.ID)
	testwait.For(t, 2*gc+2*time.Second, "the stream is purged once the edit is acked", func() bool {
		msgs, _ := rn.streamState(t)
		return msgs == 0
	})
	if got := rn.historyRows(t); got != 2 {
		t.Fatalf("history holds %d rows, want 2 (the message and its edit): purging never touches history", got)
	}
}

// readMsg reads frames until a msg frame of chat arrives.
func readMsg(t *testing.T, conn *websocket.Conn, chat string) rawMsg {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var f rawMsg
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("decode %q: %v", data, err)
		}
		if f.Type == "msg" && f.Chat == chat {
			return f
		}
	}
}

// ack acks one message id on a raw connection.
func ack(t *testing.T, conn *websocket.Conn, id string) {
	t.Helper()
	if err := conn.WriteJSON(map[string]any{"type": "ack", "ids": []string{id}}); err != nil {
		t.Fatalf("ack %s: %v", id, err)
	}
}
