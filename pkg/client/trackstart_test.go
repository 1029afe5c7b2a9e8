package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

// TrackStart decides where TrackAll starts the chats of its first listing;
// a chat that appears later is new to the client and starts at its
// beginning. The first message handed out shows where a chat started: the
// tracker hands out each chat in seq order, so a chat tracked from 0 would
// hand out seq 1 first.
func TestIntegrationTrackStart(t *testing.T) {
	n := mustNode(t, node.Config{})
	alice := mustClient(t, n, "alice", "phone", nil)
	chat := mustDirect(t, alice, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ids []string
	for i := range 3 {
		acc, err := alice.PostMessage(ctx, chat, fmt.Sprintf("old%d", i), "before the bot")
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		ids = append(ids, acc.ID)
	}
	if _, err := n.Store.MarkRead(ctx, "bob", chat, ids[1]); err != nil {
		t.Fatalf("mark read: %v", err)
	}
	// Each case posts one more message after bob connects: seq 4, 5, 6.
	for i, tt := range []struct {
		start    client.Start
		firstSeq int64
	}{
		{client.StartAtBeginning, 1},
		{client.StartNow, 5},    // the chat's last seq was 4 when bob listed it
		{client.StartUnread, 3}, // bob read up to seq 2
	} {
		t.Run(tt.start.String(), func(t *testing.T) {
			bob := mustClient(t, n, "bob", fmt.Sprintf("d%d", i), func(c *client.Config) {
				c.TrackAll = true
				c.TrackStart = tt.start
			})
			bc := run(t, bob, false)
			waitConnected(t, bob)
			// Sent right after hello, its frame may beat the first listing:
			// it must not start the chat at 0.
			if _, err := alice.PostMessage(ctx, chat, fmt.Sprintf("new%d", i), "after"); err != nil {
				t.Fatalf("post: %v", err)
			}
			last := int64(4 + i)
			want := int(last - tt.firstSeq + 1)
			got := bc.waitMessages(t, chat, want, 10*time.Second)
			if got[0].Seq != tt.firstSeq || got[len(got)-1].Seq != last || len(got) != want {
				t.Fatalf("handed out seqs %d..%d (%d messages), want %d..%d", got[0].Seq, got[len(got)-1].Seq, len(got), tt.firstSeq, last)
			}
			// Bob got a message held for the listing, so the listing is
			// done: a chat made now is new, handed out from its start.
			group, err := alice.CreateGroup(ctx, "later", []string{"bob"})
			if err != nil {
				t.Fatalf("create group: %v", err)
			}
			for j := range 2 {
				if _, err := alice.PostMessage(ctx, group.ID, fmt.Sprintf("g%d-%d", i, j), "in the new chat"); err != nil {
					t.Fatalf("post: %v", err)
				}
			}
			if g := bc.waitMessages(t, group.ID, 2, 10*time.Second); g[0].Seq != 1 || len(g) != 2 {
				t.Fatalf("new chat: handed out from seq %d (%d messages), want 1..2", g[0].Seq, len(g))
			}
			if err := bc.stop(t); err != nil {
				t.Fatalf("run: %v", err)
			}
		})
	}
}
