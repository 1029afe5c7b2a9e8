package store

import "testing"

// A row's chat is found whatever order PostgreSQL's collation gives the
// rows (a non-C locale sorts "b-a" and "ba" unlike Go), and a chat the
// batch does not hold is not found.
func TestChatIndexFindsChatsInAnyOrder(t *testing.T) {
	ids := []string{"a", "b-a", "ba", "c"}
	k := 0
	for _, chat := range []string{"a", "ba", "b-a", "c", "a"} {
		k = chatIndex(ids, k, []byte(chat))
		if k < 0 || ids[k] != chat {
			t.Fatalf("chatIndex(%q) = %d, want the index of %q", chat, k, chat)
		}
	}
	if k := chatIndex(ids, 2, []byte("d")); k != -1 {
		t.Fatalf("chatIndex of a chat not in the batch = %d, want -1", k)
	}
}
