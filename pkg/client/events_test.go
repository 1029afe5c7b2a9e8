package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/wire"
)

// Events through a real node: the other member gets each one live as a
// message of the chat's log with its fields, acks it like a message, and a
// resync from history shows the message's current state.
func TestIntegrationEventsDeliveredAndAcked(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "", nil)
	chat := mustDirect(t, alice, "bob")
	bob := mustClient(t, n, "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	alice.Track(chat)
	ac, bc := run(t, alice, false), run(t, bob, false)
	waitConnected(t, bob)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	msg, err := alice.SendMeta(ctx, chat, "", "hello", json.RawMessage(`{"reply_to":null,"n":1.50}`))
	if err != nil {
		t.Fatal(err)
	}
	edit, err := alice.Edit(ctx, chat, "e1", msg.ID, "hello, edited")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := alice.Edit(ctx, chat, "e1", msg.ID, "ignored"); err != nil || again.ID != edit.ID {
		t.Fatalf("resend of an edit: got %+v (%v), want %s", again, err, edit.ID)
	}
	if _, err := bob.React(ctx, chat, "", msg.ID, "👍", true); err != nil {
		t.Fatal(err)
	}
	var rej *client.RejectedError
	if _, err := bob.Delete(ctx, chat, "", msg.ID); !errors.As(err, &rej) || rej.Code != wire.CodeForbidden {
		t.Fatalf("bob deletes alice's message: got %v, want rejected forbidden", err)
	}
	if _, err := alice.Delete(ctx, chat, "", msg.ID); err != nil {
		t.Fatal(err)
	}

	for name, col := range map[string]*collector{"alice": ac, "bob": bc} {
		got := col.waitMessages(t, chat, 4, 10*time.Second)
		kinds := []chatd.EventKind{"", chatd.EventEdit, chatd.EventReaction, chatd.EventDelete}
		for i, m := range got {
			if m.Seq != int64(i+1) || m.Kind != kinds[i] || (i > 0 && m.Target != msg.ID) {
				t.Fatalf("%s: event %d: got %+v, want kind %q at seq %d", name, i, m, kinds[i], i+1)
			}
		}
		if string(got[0].Meta) != `{"reply_to":null,"n":1.50}` {
			t.Errorf("%s: meta %s", name, got[0].Meta)
		}
		if r := got[2]; r.Emoji != "👍" || r.On == nil || !*r.On {
			t.Errorf("%s: reaction %+v", name, r)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for st := bob.Stats(); st.AckedIDs < st.MsgFrames || st.MsgFrames < 3; st = bob.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("bob acked %d ids of %d msg frames", st.AckedIDs, st.MsgFrames)
		}
		time.Sleep(20 * time.Millisecond)
	}
	page, err := bob.History(ctx, chat, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if m := page.Messages[0]; !m.Deleted || m.Body != "" || m.Meta != nil || m.EditedAt == nil {
		t.Fatalf("history state of the deleted message: %+v", m)
	}
}
