package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

// listed returns user's chats by id.
func listed(t *testing.T, s *store.Store, user string) map[string]chatd.UserChat {
	t.Helper()
	chats, err := s.ListChats(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]chatd.UserChat, len(chats))
	for _, c := range chats {
		out[c.ID] = c
	}
	return out
}

// mustMarkRead marks user's read up to msg and checks the stored seq.
func mustMarkRead(t *testing.T, s *store.Store, user string, msg chatd.Message, wantSeq int64) {
	t.Helper()
	pos, err := s.MarkRead(context.Background(), user, msg.Chat, msg.ID)
	if err != nil || pos.Seq != wantSeq {
		t.Fatalf("%s reads seq %d: got %d (%v), want %d", user, msg.Seq, pos.Seq, err, wantSeq)
	}
}

// The unread arithmetic, step by step in one chat of alice, bob and carol:
// own messages never count, a read of message k leaves the messages from
// others after k, an older read changes nothing, and a chat never read
// counts every message from others.
func TestListChatsUnread(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob", "carol")
	empty := mustGroup(t, s, "bob")
	var msgs []chatd.Message // msgs[i] has seq i+1
	send := func(from string, n int) {
		t.Helper()
		for _, o := range mustCommit(t, s, sends(c.ID, from, fmt.Sprintf("%s-%d", from, len(msgs)), n)) {
			msgs = append(msgs, o.Message)
		}
	}
	type want struct{ lastSeq, readSeq, unread int64 }
	check := func(step, user string, w want) {
		t.Helper()
		got, ok := listed(t, s, user)[c.ID]
		if !ok {
			t.Fatalf("%s: %s's list lacks the chat", step, user)
		}
		if g := (want{got.LastSeq, got.ReadSeq, got.Unread}); g != w {
			t.Errorf("%s: %s got last_seq/read_seq/unread %v, want %v", step, user, g, w)
		}
	}

	send("alice", 3) // 1-3
	send("bob", 2)   // 4-5
	send("alice", 2) // 6-7
	send("carol", 1) // 8
	check("never read", "bob", want{8, 0, 6})
	check("never read, own messages not counted", "alice", want{8, 0, 3})
	check("never read", "carol", want{8, 0, 7})

	mustMarkRead(t, s, "bob", msgs[2], 3)
	check("read 3", "bob", want{8, 3, 3}) // 6, 7, 8
	mustMarkRead(t, s, "bob", msgs[5], 6)
	check("read 6", "bob", want{8, 6, 2}) // 7, 8
	mustMarkRead(t, s, "bob", msgs[0], 6)
	check("older read keeps read_seq", "bob", want{8, 6, 2})
	mustMarkRead(t, s, "bob", msgs[4], 6) // his own message, also older
	check("older read of own message", "bob", want{8, 6, 2})
	check("bob's reads are his own", "alice", want{8, 0, 3})

	mustMarkRead(t, s, "bob", msgs[7], 8)
	check("read to the end", "bob", want{8, 8, 0})
	send("bob", 1) // 9
	check("own message after the read", "bob", want{9, 8, 0})
	check("bob's new message", "carol", want{9, 0, 8})
	mustMarkRead(t, s, "carol", msgs[8], 9)
	check("read to the end", "carol", want{9, 9, 0})
	send("alice", 2) // 10-11
	check("two more from alice", "bob", want{11, 8, 2})
	check("two more from alice", "carol", want{11, 9, 2})

	if got := listed(t, s, "bob")[empty.ID]; got.LastSeq != 0 || got.ReadSeq != 0 || got.Unread != 0 {
		t.Errorf("empty chat: got last_seq %d read_seq %d unread %d, want all 0", got.LastSeq, got.ReadSeq, got.Unread)
	}
}

// A user in many chats gets each chat's own numbers from the one statement.
func TestListChatsUnreadManyChats(t *testing.T) {
	s, _ := mustOpen(t)
	const chats = 40
	for i := range chats {
		c := mustGroup(t, s, "alice", "bob")
		msgs := mustFill(t, s, c.ID, "alice", i+1) // chat i has i+1 messages
		if i%2 == 0 {
			mustMarkRead(t, s, "bob", msgs[i/2], int64(i/2+1))
		}
	}
	list, err := s.ListChats(context.Background(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != chats {
		t.Fatalf("got %d chats, want %d", len(list), chats)
	}
	for i, c := range list { // oldest first: chat i
		wantRead := int64(0)
		if i%2 == 0 {
			wantRead = int64(i/2 + 1)
		}
		if c.LastSeq != int64(i+1) || c.ReadSeq != wantRead || c.Unread != int64(i+1)-wantRead {
			t.Errorf("chat %d: got last_seq %d read_seq %d unread %d, want %d %d %d",
				i, c.LastSeq, c.ReadSeq, c.Unread, i+1, wantRead, int64(i+1)-wantRead)
		}
	}
}

// The unread count walks the (chat_id, seq) index carrying sender and never
// touches the heap (an index-only scan), so its cost is the unread messages,
// not the chat's length or the table's size. A user in many chats pays one
// such range per chat.
func TestListChatsUnreadCountIsIndexOnly(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	for i := range 20 {
		c := mustGroup(t, s, "alice", "bob")
		msgs := mustFill(t, s, c.ID, "alice", 500)
		if i%2 == 0 {
			mustMarkRead(t, s, "bob", msgs[250], 251)
		}
	}
	// Vacuum sets the visibility map, as autovacuum does on a live table;
	// without it every index-only scan would still visit the heap.
	if _, err := s.Pool().Exec(ctx, `vacuum analyze history, members, chats, read_state`); err != nil {
		t.Fatal(err)
	}
	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	if err := s.Pool().QueryRow(ctx, `explain (format json) `+store.ListChatsSQL, "bob").Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var history []planNode
	plan[0].Plan.walk(func(n planNode) {
		if n.Relation == "history" {
			history = append(history, n)
		}
	})
	text, _ := json.Marshal(plan)
	if len(history) != 1 {
		t.Fatalf("plan reads history %d times, want once (the count): %s", len(history), text)
	}
	if n := history[0]; n.Type != "Index Only Scan" || n.Index != "history_chat_seq_key" {
		t.Fatalf("count reads history by %s on %q, want an Index Only Scan on history_chat_seq_key: %s", n.Type, n.Index, text)
	}
}

// planNode is the part of an EXPLAIN (FORMAT JSON) node the plan tests read.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, p := range n.Plans {
		p.walk(fn)
	}
}
