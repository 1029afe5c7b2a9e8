package client_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
)

func msg(chat string, seq int64) chatd.Message {
	return chatd.Message{ID: fmt.Sprintf("%s-%d", chat, seq), Chat: chat, Seq: seq}
}

func TestTrackerOrdersAndDedupes(t *testing.T) {
	type step struct {
		seq     int64
		ready   []int64
		dup     bool
		contig  int64
		waiting bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{
			{1, []int64{1}, false, 1, false},
			{2, []int64{2}, false, 2, false},
		}},
		{"gap held then filled", []step{
			{1, []int64{1}, false, 1, false},
			{3, nil, false, 1, true},
			{4, nil, false, 1, true},
			{2, []int64{2, 3, 4}, false, 4, false},
		}},
		{"duplicates of handed out and held", []step{
			{1, []int64{1}, false, 1, false},
			{1, nil, true, 1, false},
			{3, nil, false, 1, true},
			{3, nil, true, 1, true},
			{2, []int64{2, 3}, false, 3, false},
			{2, nil, true, 3, false},
			{3, nil, true, 3, false},
		}},
		{"reverse order", []step{
			{3, nil, false, 0, true},
			{2, nil, false, 0, true},
			{1, []int64{1, 2, 3}, false, 3, false},
		}},
		{"two gaps fill separately", []step{
			{2, nil, false, 0, true},
			{5, nil, false, 0, true},
			{1, []int64{1, 2}, false, 2, true},
			{4, nil, false, 2, true},
			{3, []int64{3, 4, 5}, false, 5, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := client.NewTracker(100)
			tr.Track("c", 0)
			for i, st := range tt.steps {
				ready, dup := tr.Add(msg("c", st.seq))
				if !slices.Equal(ready, st.ready) || dup != st.dup {
					t.Fatalf("step %d add %d: got ready %v dup %v, want %v %v", i, st.seq, ready, dup, st.ready, st.dup)
				}
				if got, _ := tr.Contiguous("c"); got != st.contig {
					t.Fatalf("step %d: got contiguous %d, want %d", i, got, st.contig)
				}
				if got := tr.HasGap("c"); got != st.waiting {
					t.Fatalf("step %d: got gap %v, want %v", i, got, st.waiting)
				}
			}
		})
	}
}

// Every message offered many times, in random order, across chats, comes
// out exactly once per chat in seq order.
func TestTrackerExactlyOnceInOrderUnderShuffle(t *testing.T) {
	tr := client.NewTracker(1 << 20)
	const n = 500
	var offers []chatd.Message
	for _, chat := range []string{"a", "b"} {
		for seq := int64(1); seq <= n; seq++ {
			for range 1 + rand.IntN(3) {
				offers = append(offers, msg(chat, seq))
			}
		}
	}
	rand.Shuffle(len(offers), func(i, j int) { offers[i], offers[j] = offers[j], offers[i] })
	out := map[string][]int64{}
	dups := 0
	for _, m := range offers {
		ready, dup := tr.Add(m)
		if dup {
			dups++
		}
		out[m.Chat] = append(out[m.Chat], ready...)
	}
	for _, chat := range []string{"a", "b"} {
		if len(out[chat]) != n {
			t.Fatalf("chat %s: got %d messages, want %d", chat, len(out[chat]), n)
		}
		for i, seq := range out[chat] {
			if seq != int64(i+1) {
				t.Fatalf("chat %s: position %d has seq %d, want %d", chat, i, seq, i+1)
			}
		}
	}
	if want := len(offers) - 2*n; dups != want {
		t.Fatalf("got %d duplicates, want %d", dups, want)
	}
}

func TestTrackerResumePoint(t *testing.T) {
	tr := client.NewTracker(100)
	if !tr.Track("c", 10) {
		t.Fatal("first Track: got false, want true")
	}
	if tr.Track("c", 20) {
		t.Fatal("second Track: got true, want false (resume point must not move)")
	}
	if ready, dup := tr.Add(msg("c", 7)); len(ready) != 0 || !dup {
		t.Fatalf("seq below resume point: got ready %v dup %v, want none, dup", ready, dup)
	}
	if ready, _ := tr.Add(msg("c", 11)); !slices.Equal(ready, []int64{11}) {
		t.Fatalf("seq after resume point: got %v, want [11]", ready)
	}
}

func TestTrackerAutoTracksUnknownChatFromZero(t *testing.T) {
	tr := client.NewTracker(100)
	if ready, _ := tr.Add(msg("new", 3)); len(ready) != 0 {
		t.Fatalf("got ready %v, want the frame held until 1..2 arrive", ready)
	}
	if !tr.HasGap("new") {
		t.Fatal("got no gap, want one")
	}
}

func TestTrackerSkipReleasesHeldInOrder(t *testing.T) {
	tr := client.NewTracker(100)
	tr.Track("c", 0)
	tr.Add(msg("c", 4))
	tr.Add(msg("c", 6))
	tr.Add(msg("c", 7))
	// History starts at 6: 1..5 are purged. 4 is held and is released first.
	got := tr.SkipTo("c", 5)
	if want := []int64{4, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if c, _ := tr.Contiguous("c"); c != 7 {
		t.Fatalf("got contiguous %d, want 7", c)
	}
	if got := tr.SkipTo("c", 3); len(got) != 0 {
		t.Fatalf("skip below the resume point: got %v, want nothing", got)
	}
}

func TestTrackerHeldBufferBoundDropsNewest(t *testing.T) {
	tr := client.NewTracker(3)
	tr.Track("c", 0)
	for _, seq := range []int64{10, 2, 3, 4} {
		tr.Add(msg("c", seq))
	}
	if got := tr.Held(); got != 3 {
		t.Fatalf("got %d held, want 3", got)
	}
	// 10 was the newest and was dropped: it must not come out after 1..4,
	// and must be accepted (not a duplicate) when history brings it again.
	if ready, _ := tr.Add(msg("c", 1)); !slices.Equal(ready, []int64{1, 2, 3, 4}) {
		t.Fatalf("got %v, want [1 2 3 4]", ready)
	}
	if ready, dup := tr.Add(msg("c", 10)); dup || len(ready) != 0 {
		t.Fatalf("refetched 10: got ready %v dup %v, want held, not dup", ready, dup)
	}
}
