package main

import (
	"testing"
	"time"

	"github.com/chatd/chatd"
)

func TestParseMix(t *testing.T) {
	tests := []struct {
		name    string
		mix     string
		wantErr bool
		want    int // action picked at u = 0.55
	}{
		{name: "default", mix: defaultMix, want: actEdit},
		{name: "send only", mix: "send=1", want: actSend},
		{name: "unknown action", mix: "send=1,poke=2", wantErr: true},
		{name: "no send", mix: "edit=1", wantErr: true},
		{name: "negative", mix: "send=1,read=-1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := parseMix(tt.mix)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && w.pick(0.55) != tt.want {
				t.Errorf("got action %d at 0.55, want %d", w.pick(0.55), tt.want)
			}
		})
	}
}

// TestMemberStateHistoryThenEvents: a message read from history already
// carries the state its later events produce; replaying those events over
// it must end in the same state as applying them to the fresh message.
func TestMemberStateHistoryThenEvents(t *testing.T) {
	on, off := true, false
	now := time.Now()
	events := []chatd.Message{
		{ID: "e1", Seq: 2, Kind: chatd.EventEdit, Target: "m1", Body: "two", From: "a"},
		{ID: "r1", Seq: 3, Kind: chatd.EventReaction, Target: "m1", Emoji: "👍", On: &on, From: "b"},
		{ID: "r2", Seq: 4, Kind: chatd.EventReaction, Target: "m1", Emoji: "👍", On: &on, From: "c"},
		{ID: "r3", Seq: 5, Kind: chatd.EventReaction, Target: "m1", Emoji: "👍", On: &off, From: "b"},
	}
	var live, hist memberState
	live.apply(chatd.Message{ID: "m1", Seq: 1, Body: "one", From: "a", Meta: []byte(`{"n": 1e3}`)})
	hist.apply(chatd.Message{ID: "m1", Seq: 1, Body: "two", From: "a", Meta: []byte(`{"n":1e3}`),
		EditedAt: &now, Reactions: map[string][]string{"👍": {"c"}}})
	for _, e := range events {
		live.apply(e)
		hist.apply(e)
	}
	want := &msgState{Body: "two", Meta: []byte(`{"n":1e3}`), Edited: true, Reactions: map[string][]string{"👍": {"c"}}}
	for name, ms := range map[string]*memberState{"live": &live, "history": &hist} {
		if got := ms.get("m1"); got == nil || !got.equal(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	live.apply(chatd.Message{ID: "d1", Seq: 6, Kind: chatd.EventDelete, Target: "m1", From: "a"})
	want = &msgState{Edited: true, Deleted: true}
	if got := live.get("m1"); !got.equal(want) {
		t.Errorf("after delete: got %v, want %v", got, want)
	}
}
