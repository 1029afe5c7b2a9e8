package webhook_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/webhook"
)

// samePayloadJSON fails unless Encode writes what json.Marshal writes for p:
// receivers verify signatures over these bytes, and docs/integrations.md
// documents the encoding/json shape.
func samePayloadJSON(t *testing.T, p webhook.Payload) {
	t.Helper()
	want, wantErr := json.Marshal(&p)
	got, err := p.Encode()
	if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
		t.Fatalf("Encode:\n got %s, %v\nwant %s, %v", got, err, want, wantErr)
	}
}

func TestPayloadEncodesAsEncodingJSON(t *testing.T) {
	on := true
	at := time.Unix(1e9, 7).UTC()
	base := chatd.Envelope{OutboxID: 9, Device: "phone", Recipients: []string{"alice", "bob"},
		Message: chatd.Message{ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", CID: "k-1", Chat: "c_42", From: "alice",
			Body: "hello", Seq: 42, TS: time.Date(2026, 12, 5, 2, 0, 0, 123456789, time.UTC)}}
	for name, edit := range map[string]func(e *chatd.Envelope){
		"message":       func(e *chatd.Envelope) {},
		"escapes":       func(e *chatd.Envelope) { e.Message.Body = "<a href=\"x\">&</a>\u2028\x00\n\\" },
		"invalid UTF-8": func(e *chatd.Envelope) { e.Message.Body, e.Message.Chat = "a\xffb\xc3", "c\xfe" },
		"no recipients": func(e *chatd.Envelope) { e.Recipients = nil },
		"meta":          func(e *chatd.Envelope) { e.Message.Meta = []byte(` { "r" : "<x>", "n": [1.50] } `) },
		"reaction": func(e *chatd.Envelope) {
			e.Message.Kind, e.Message.Emoji, e.Message.On = chatd.EventReaction, "👍", &on
		},
		"edit": func(e *chatd.Envelope) {
			e.Message.Kind, e.Message.Target = chatd.EventEdit, "01HZZZZZZZZZZZZZZZZZZZZZZY"
		},
		"legacy kind":      func(e *chatd.Envelope) { e.Message.Kind = "msg" },
		"offset time":      func(e *chatd.Envelope) { e.Message.TS = e.Message.TS.In(time.FixedZone("x", 5*3600+1800)) },
		"read state":       func(e *chatd.Envelope) { e.Message.EditedAt, e.Message.Deleted = &at, true },
		"reactions":        func(e *chatd.Envelope) { e.Message.Reactions = map[string][]string{"<3": {"a"}} },
		"time out of JSON": func(e *chatd.Envelope) { e.Message.TS = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		t.Run(name, func(t *testing.T) {
			e := base
			edit(&e)
			samePayloadJSON(t, webhook.NewPayload(&e))
		})
	}
	samePayloadJSON(t, webhook.Payload{Type: "chat.message"}) // nil recipients stay null
}

func FuzzPayloadJSON(f *testing.F) {
	for _, s := range []string{"hi", "<>&", "\x00\u2028\xff", `{"a":[1,"<"]}`} {
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		on := n%2 == 0
		e := chatd.Envelope{OutboxID: n, Device: s, Recipients: []string{s, "b"},
			Message: chatd.Message{ID: s, CID: s, Chat: s, From: s, Body: s, Seq: -n, Kind: chatd.EventKind(s),
				Target: s, Emoji: s, On: &on, TS: time.Unix(n%(1<<34), n%1e9).UTC()}}
		if json.Valid([]byte(s)) && len(s) > 0 && (s[0] == '{' || s[0] == '[') {
			e.Message.Meta = json.RawMessage(s)
		}
		samePayloadJSON(t, webhook.NewPayload(&e))
	})
}

func BenchmarkPayloadEncode(b *testing.B) {
	e := chatd.Envelope{OutboxID: 123456, Device: "phone", Recipients: []string{"alice", "bob"},
		Message: chatd.Message{ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", CID: "k-123", Chat: "c_42", From: "alice",
			Body: "a message of an ordinary length, sixty-four bytes or thereabouts", Seq: 4242,
			TS: time.Date(2026, 11, 30, 19, 0, 0, 123456789, time.UTC)}}
	p := webhook.NewPayload(&e)
	b.Run("encode", func(b *testing.B) {
		for range b.N {
			if _, err := p.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/encoding_json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
