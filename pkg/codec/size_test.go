package codec_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
)

func TestEnvelopeSizeMatchesJSON(t *testing.T) {
	base := chatd.Envelope{
		OutboxID: 42,
		Message: chatd.Message{
			ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", CID: "k-1", Chat: "c_1", From: "alice", Body: "hi",
			Seq: 7, TS: time.Date(2026, 11, 30, 19, 0, 0, 123456000, time.UTC), Device: "phone",
		},
		Device: "phone", Recipients: []string{"alice", "bob"},
	}
	tests := []struct {
		name string
		edit func(*chatd.Envelope)
	}{
		{"plain", func(*chatd.Envelope) {}},
		{"zero", func(e *chatd.Envelope) { *e = chatd.Envelope{} }},
		{"no recipients", func(e *chatd.Envelope) { e.Recipients = []string{} }},
		{"largest ids", func(e *chatd.Envelope) { e.OutboxID, e.Message.Seq = math.MaxInt64, math.MaxInt64 }},
		{"negative", func(e *chatd.Envelope) { e.OutboxID = -5 }},
		{"whole-second ts", func(e *chatd.Envelope) { e.Message.TS = time.Unix(1e9, 0).UTC() }},
		{"zoned ts", func(e *chatd.Envelope) { e.Message.TS = time.Unix(1e9, 5).In(time.FixedZone("x", -3*3600-1800)) }},
		{"HTML characters", func(e *chatd.Envelope) { e.Message.Body = "<a href=\"x\">&amp;</a>" }},
		{"control characters", func(e *chatd.Envelope) {
			var b strings.Builder
			for c := range 0x20 {
				b.WriteByte(byte(c))
			}
			e.Message.Body = b.String() + "\x7f\\\"/"
		}},
		{"unicode", func(e *chatd.Envelope) { e.Message.Body = "héllo 👍 \u2028\u2029 日本" }},
		{"invalid UTF-8", func(e *chatd.Envelope) { e.Message.Body = "a\xffb\xc3" }},
		{"edit event", func(e *chatd.Envelope) {
			e.Message.Kind, e.Message.Target = chatd.EventEdit, "01HZZZZZZZZZZZZZZZZZZZZZZY"
		}},
		{"meta", func(e *chatd.Envelope) {
			e.Message.Meta = []byte(`{ "reply_to" : "x<y>&z\u2028 \"q\\", "n": [1.50, 1e3, {"a" : null}], "s":"  " }`)
		}},
		{"reaction on", func(e *chatd.Envelope) {
			on := true
			e.Message.Kind, e.Message.Emoji, e.Message.On = chatd.EventReaction, "👍<&>", &on
		}},
		{"reaction off", func(e *chatd.Envelope) {
			on := false
			e.Message.Kind, e.Message.Emoji, e.Message.On = chatd.EventReaction, "x", &on
		}},
		{"current state", func(e *chatd.Envelope) {
			at := time.Unix(1e9, 7).UTC()
			e.Message.EditedAt, e.Message.Deleted = &at, true
			e.Message.Reactions = map[string][]string{"👍": {"alice", "bob"}, "<3": {"c"}, "x": nil}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base
			tt.edit(&e)
			raw, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if got := codec.EnvelopeSize(&e); got != len(raw) {
				t.Fatalf("got %d, want %d (%s)", got, len(raw), raw)
			}
			sameEnvelopeJSON(t, &e)
		})
	}
}

func FuzzJSONStringSize(f *testing.F) {
	for _, s := range []string{"", "x", "<>&", "\x00\n\t", "\u2028", "\xff", "👍"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := codec.JSONStringSize(s); got != len(raw) {
			t.Fatalf("JSONStringSize(%q): got %d, want %d", s, got, len(raw))
		}
	})
}

// EnvelopeSize spells out every field of the envelope: a new field must be
// added there too, or the size check at acceptance would undercount.
func TestEnvelopeFieldsAreCounted(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[chatd.Envelope](): 4,
		reflect.TypeFor[chatd.Message]():  16,
	} {
		if got := typ.NumField(); got != want {
			t.Errorf("%s has %d fields, EnvelopeSize knows %d: count the new one in EnvelopeSize and its test", typ, got, want)
		}
	}
}

func TestWorstCaseEnvelopeSize(t *testing.T) {
	body := strings.Repeat("<", 100)
	id := strings.Repeat("z", 64)
	e := chatd.Envelope{
		OutboxID: math.MaxInt64,
		Message: chatd.Message{ID: id[:26], CID: id, Chat: id, From: id, Body: body, Seq: math.MaxInt64,
			TS: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		Device: id, Recipients: []string{id, id},
	}
	// The largest meta: an object of MaxMetaBytes whose key JSON escapes
	// 6 times over (6 bytes of it are `{"":0}`).
	e.Message.Meta = json.RawMessage(`{"` + strings.Repeat("<", chatd.MaxMetaBytes-6) + `":0}`)
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := codec.WorstCaseEnvelopeSize(100, 2); got < len(raw) || got > len(raw)+64 {
		t.Fatalf("got %d for an envelope of %d bytes, want a bound at most 64 bytes over it", got, len(raw))
	}
	if d := codec.WorstCaseEnvelopeSize(101, 2) - codec.WorstCaseEnvelopeSize(100, 2); d != 6 {
		t.Fatalf("growth per body byte: got %d, want 6", d)
	}
}

// EnvelopeSize runs once per send inside the committing transaction, with the
// chat's member list: it must stay cheap next to the insert.
func BenchmarkEnvelopeSize(b *testing.B) {
	for _, members := range []int{2, 100, 1000} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			to := make([]string, members)
			for i := range to {
				to[i] = fmt.Sprintf("user-%06d", i)
			}
			e := chatd.Envelope{OutboxID: math.MaxInt64, Message: chatd.Message{
				ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", CID: "k", Chat: "c", From: "alice",
				Body: strings.Repeat("hello <world> ", 100), Seq: 1, TS: time.Now().UTC(),
			}, Device: "d", Recipients: to}
			b.ReportAllocs()
			for b.Loop() {
				_ = codec.EnvelopeSize(&e)
			}
		})
	}
}
