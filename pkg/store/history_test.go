package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

// mustFill commits n messages into chat in batches of 256 and returns them.
func mustFill(t testing.TB, s *store.Store, chat, from string, n int) []chatd.Message {
	t.Helper()
	var msgs []chatd.Message
	for b := 0; len(msgs) < n; b++ {
		for _, o := range mustCommit(t, s, sends(chat, from, fmt.Sprintf("%s-fill%d", chat, b), min(256, n-len(msgs)))) {
			msgs = append(msgs, o.Message)
		}
	}
	return msgs
}

func TestHistoryPaging(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice")
	other := mustGroup(t, s, "alice")
	const total = 10000 // the size: paged by since and by after_seq
	want := mustFill(t, s, c.ID, "alice", total)
	otherMsgs := mustFill(t, s, other.ID, "alice", 3)

	tests := []struct {
		name  string
		first chatd.HistoryQuery
		next  func(last chatd.Message) chatd.HistoryQuery
	}{
		{"since id", chatd.HistoryQuery{Limit: 100}, func(m chatd.Message) chatd.HistoryQuery {
			return chatd.HistoryQuery{SinceID: m.ID, Limit: 100}
		}},
		{"after seq", chatd.HistoryQuery{Limit: 97}, func(m chatd.Message) chatd.HistoryQuery {
			return chatd.HistoryQuery{AfterSeq: m.Seq, Limit: 97}
		}},
		{"unknown since id starts at the oldest", chatd.HistoryQuery{SinceID: "01UNKNOWN", AfterSeq: 500, Limit: 999}, func(m chatd.Message) chatd.HistoryQuery {
			return chatd.HistoryQuery{SinceID: m.ID, Limit: 999}
		}},
		{"another chat's id starts at the oldest", chatd.HistoryQuery{SinceID: otherMsgs[2].ID, Limit: 1000}, func(m chatd.Message) chatd.HistoryQuery {
			return chatd.HistoryQuery{SinceID: m.ID, Limit: 1000}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []chatd.Message
			q := tt.first
			for pages := 0; ; pages++ {
				if pages > total {
					t.Fatal("paging does not end")
				}
				page, more, err := s.History(ctx, c.ID, q)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if !more {
					break
				}
				q = tt.next(page[len(page)-1])
			}
			if len(got) != total {
				t.Fatalf("got %d messages, want %d", len(got), total)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("message %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}

	t.Run("limits", func(t *testing.T) {
		for _, tt := range []struct{ limit, want int }{{0, 100}, {-5, 100}, {1, 1}, {1000, 1000}, {5000, 1000}} {
			page, more, err := s.History(ctx, c.ID, chatd.HistoryQuery{Limit: tt.limit})
			if err != nil || len(page) != tt.want || !more {
				t.Errorf("limit %d: got %d (more %v, %v), want %d and more", tt.limit, len(page), more, err, tt.want)
			}
		}
		page, more, err := s.History(ctx, c.ID, chatd.HistoryQuery{AfterSeq: total})
		if err != nil || len(page) != 0 || more {
			t.Errorf("past the end: got %d (more %v, %v), want 0 and no more", len(page), more, err)
		}
		if _, _, err := s.History(ctx, c.ID, chatd.HistoryQuery{AfterSeq: -1}); !errors.Is(err, chatd.ErrInvalid) {
			t.Errorf("negative after_seq: got %v, want ErrInvalid", err)
		}
	})
}

// Paging a chat walks the unique (chat_id, seq) index rather than scanning
// or sorting history.
func TestHistoryPagingUsesChatSeqIndex(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	a := mustGroup(t, s, "alice")
	b := mustGroup(t, s, "alice")
	mustFill(t, s, a.ID, "alice", 2000)
	mustFill(t, s, b.ID, "alice", 2000)
	if _, err := s.Pool().Exec(ctx, `analyze history`); err != nil {
		t.Fatal(err)
	}
	var plan []map[string]any
	if err := s.Pool().QueryRow(ctx, `explain (format json)
		select msg_id from history
		where chat_id = $1 and seq > coalesce((select seq from history where msg_id = $2 and chat_id = $1), $3)
		order by seq limit $4`, a.ID, "", 100, 101).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(plan)
	if !strings.Contains(string(text), `"Index Name":"history_chat_seq_key"`) || strings.Contains(string(text), `"Node Type":"Sort"`) {
		t.Fatalf("plan does not page by the (chat_id, seq) index: %s", text)
	}
	// Paging up (BeforeSeq) walks the same index backwards.
	if err := s.Pool().QueryRow(ctx, `explain (format json)
		select msg_id from history where chat_id = $1 and seq < $2 order by seq desc limit $3`,
		a.ID, 1500, 101).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	text, _ = json.Marshal(plan)
	if !strings.Contains(string(text), `"Index Name":"history_chat_seq_key"`) || strings.Contains(string(text), `"Node Type":"Sort"`) {
		t.Fatalf("plan does not page up by the (chat_id, seq) index: %s", text)
	}
}

// Paging up from the newest with BeforeSeq walks the whole history in
// pages of the seqs just below the cursor, each oldest first, and says
// whether older messages remain; BeforeSeq with another cursor is invalid.
func TestHistoryBeforeSeq(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice")
	const total = 1000
	want := mustFill(t, s, c.ID, "alice", total)
	mustFill(t, s, mustGroup(t, s, "alice").ID, "alice", 5) // another chat's rows stay out

	var got []chatd.Message
	before := int64(total + 1)
	for pages := 0; ; pages++ {
		if pages > total {
			t.Fatal("paging up does not end")
		}
		page, more, err := s.History(ctx, c.ID, chatd.HistoryQuery{BeforeSeq: before, Limit: 99})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(page); i++ {
			if page[i].Seq != page[i-1].Seq+1 {
				t.Fatalf("page below %d: seq %d after %d, want ascending", before, page[i].Seq, page[i-1].Seq)
			}
		}
		if len(page) > 0 && page[len(page)-1].Seq != before-1 {
			t.Fatalf("page below %d ends at seq %d, want %d", before, page[len(page)-1].Seq, before-1)
		}
		got = append(page, got...)
		if !more {
			break
		}
		before = page[0].Seq
	}
	if len(got) != total {
		t.Fatalf("got %d messages, want %d", len(got), total)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("message %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	for _, tt := range []struct {
		name string
		q    chatd.HistoryQuery
		want int // messages; -1 means ErrInvalid
	}{
		{"below the first", chatd.HistoryQuery{BeforeSeq: 1}, 0},
		{"far above the last", chatd.HistoryQuery{BeforeSeq: 1 << 62, Limit: 5}, 5},
		{"with after_seq", chatd.HistoryQuery{BeforeSeq: 10, AfterSeq: 2}, -1},
		{"with since", chatd.HistoryQuery{BeforeSeq: 10, SinceID: want[0].ID}, -1},
		{"negative", chatd.HistoryQuery{BeforeSeq: -1}, -1},
	} {
		page, more, err := s.History(ctx, c.ID, tt.q)
		switch {
		case tt.want < 0 && !errors.Is(err, chatd.ErrInvalid):
			t.Errorf("%s: got %v, want ErrInvalid", tt.name, err)
		case tt.want >= 0 && (err != nil || len(page) != tt.want):
			t.Errorf("%s: got %d messages (more %v, %v), want %d", tt.name, len(page), more, err, tt.want)
		}
	}
}
