package chatd_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
)

func TestSendRequestCheck(t *testing.T) {
	msg := chatd.SendRequest{Chat: "c_1", From: "alice", Device: "phone", CID: "k-1", Body: "hi"}
	target := "01JEXAMPLE0000000000000000"
	tests := []struct {
		name    string
		edit    func(*chatd.SendRequest)
		wantErr error
		want    string // substring of the error, the client's text
	}{
		{"message", func(*chatd.SendRequest) {}, nil, ""},
		{"empty body", func(r *chatd.SendRequest) { r.Body = "" }, chatd.ErrInvalid, "body is empty"},
		{"body over the limit", func(r *chatd.SendRequest) { r.Body = strings.Repeat("x", 11) }, chatd.ErrTooLarge, "body is 11 bytes, the limit is 10"},
		{"NUL in body", func(r *chatd.SendRequest) { r.Body = "a\x00" }, chatd.ErrInvalid, "body holds a NUL"},
		{"body is checked before meta", func(r *chatd.SendRequest) { r.Body, r.Meta = "a\x00", json.RawMessage(`[1]`) }, chatd.ErrInvalid, "body holds a NUL"},
		{"meta not an object", func(r *chatd.SendRequest) { r.Meta = json.RawMessage(`[1]`) }, chatd.ErrInvalid, "meta must be a JSON object"},
		{"bad chat", func(r *chatd.SendRequest) { r.Chat = "a b" }, chatd.ErrInvalid, "chat id"},
		{"bad cid", func(r *chatd.SendRequest) { r.CID = "" }, chatd.ErrInvalid, "cid"},
		{"edit over the limit", func(r *chatd.SendRequest) {
			r.Kind, r.Target, r.Body = chatd.EventEdit, target, strings.Repeat("x", 11)
		}, chatd.ErrTooLarge, "body is 11 bytes"},
		{"edit with meta", func(r *chatd.SendRequest) {
			r.Kind, r.Target, r.Meta = chatd.EventEdit, target, json.RawMessage(`{}`)
		}, chatd.ErrInvalid, "meta is carried by messages only"},
		{"reaction without target", func(r *chatd.SendRequest) { r.Kind, r.Emoji = chatd.EventReaction, "x" }, chatd.ErrInvalid, "target"},
		{"reaction emoji too long", func(r *chatd.SendRequest) {
			r.Kind, r.Target, r.Emoji = chatd.EventReaction, target, strings.Repeat("x", chatd.MaxEmojiBytes+1)
		}, chatd.ErrTooLarge, "emoji is"},
		{"unknown kind", func(r *chatd.SendRequest) { r.Kind, r.Target = "poke", target }, chatd.ErrInvalid, "unknown event kind"},
		{"system edit", func(r *chatd.SendRequest) {
			r.Kind, r.Target, r.System = chatd.EventEdit, target, true
		}, chatd.ErrInvalid, "a system send is a message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := msg
			tt.edit(&r)
			err := r.Check(10)
			if !errors.Is(err, tt.wantErr) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %v containing %q", err, tt.wantErr, tt.want)
			}
		})
	}
}

// Check clears what a kind does not carry, and Message stores the event
// fields of the kind only.
func TestSendRequestMessage(t *testing.T) {
	ts := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	target := "01JEXAMPLE0000000000000000"
	react := chatd.SendRequest{Chat: "c", From: "a", Device: "d", CID: "k", Body: "dropped", Kind: chatd.EventReaction,
		Target: target, Emoji: "👍", On: true}
	if err := react.Check(10); err != nil {
		t.Fatal(err)
	}
	on := true
	want := chatd.Message{ID: "m", CID: "k", Chat: "c", From: "a", Seq: 3, TS: ts, Device: "d",
		Kind: chatd.EventReaction, Target: target, Emoji: "👍", On: &on}
	if got := react.Message("m", 3, ts); !reflect.DeepEqual(got, want) {
		t.Errorf("reaction: got %+v, want %+v", got, want)
	}
	msg := chatd.SendRequest{Chat: "c", From: "a", Device: "d", CID: "k", Body: "hi", Kind: chatd.EventMessage,
		Meta: json.RawMessage(`{ "a" : 1 }`), Emoji: "dropped", On: true}
	if err := msg.Check(10); err != nil {
		t.Fatal(err)
	}
	want = chatd.Message{ID: "m", CID: "k", Chat: "c", From: "a", Body: "hi", Seq: 3, TS: ts, Device: "d", Meta: json.RawMessage(`{"a":1}`)}
	if got := msg.Message("m", 3, ts); !reflect.DeepEqual(got, want) {
		t.Errorf("message: got %+v, want %+v", got, want)
	}
}
