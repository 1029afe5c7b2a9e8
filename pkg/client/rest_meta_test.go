package client_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node"
)

// PostMessageMeta stores meta verbatim (the same JSON value, number texts
// included), and a resend of its cid is answered with the original.
func TestIntegrationPostMessageMeta(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "phone", nil)
	chat := mustDirect(t, alice, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta := json.RawMessage(`{"reply_to":"01HZX","n":1e3}`)
	acc, err := alice.PostMessageMeta(ctx, chat, "m1", "hi", meta)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	again, err := alice.PostMessageMeta(ctx, chat, "m1", "hi", meta)
	if err != nil || again.ID != acc.ID {
		t.Fatalf("resend: %+v, %v; want the original %s", again, err, acc.ID)
	}
	page, err := alice.History(ctx, chat, 0, 10)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	if len(page.Messages) != 1 || string(page.Messages[0].Meta) != string(meta) {
		t.Fatalf("history %+v, want one message with meta %s", page.Messages, meta)
	}
}
