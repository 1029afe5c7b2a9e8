package wire_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata/golden")

// goldenMessage carries every field of the msg object, with text that
// exercises the string escapes (quotes, control characters, <, > and &,
// U+2028, a non-BMP rune).
func goldenMessage() chatd.Message {
	on := true
	edited := time.Date(2026, 12, 1, 8, 9, 10, 123456789, time.UTC)
	return chatd.Message{
		ID: "01JEXAMPLE0000000000000001", CID: "k-1", Chat: "c_1", From: "alice",
		Body: "hi \"you\" <b>&</b>\n\t\u2028\x01 😀", Seq: 42, TS: testTS,
		Kind: chatd.EventReaction, Target: "01JEXAMPLE0000000000000000",
		Meta: json.RawMessage(`{"a":[1,{"b":"<&>"}],"z":null}`), Emoji: "👍", On: &on,
		EditedAt: &edited, Deleted: true,
		Reactions: map[string][]string{"👍": {"alice", "bob"}, "<3": {"carol"}, "a": {}},
	}
}

// goldenServerFrames are the server's frames of every type and every msg
// shape the server writes (a message, an edit, a delete, a reaction, and a
// history read's state).
func goldenServerFrames() map[string][]byte {
	full := goldenMessage()
	plain := chatd.Message{ID: "01JEXAMPLE0000000000000000", CID: "k-0", Chat: "c_1", From: "bob", Body: "hello", Seq: 41, TS: testTS}
	withMeta := plain
	withMeta.Meta = json.RawMessage(`{"reply_to":"01JEXAMPLE","n":1.50}`)
	edit := chatd.Message{ID: "01JEXAMPLE0000000000000002", CID: "k-2", Chat: "c_1", From: "bob", Body: "hello again",
		Seq: 43, TS: testTS, Kind: chatd.EventEdit, Target: plain.ID}
	del := chatd.Message{ID: "01JEXAMPLE0000000000000003", CID: "k-3", Chat: "c_1", From: "bob",
		Seq: 44, TS: testTS, Kind: chatd.EventDelete, Target: plain.ID}
	off := false
	unreact := chatd.Message{ID: "01JEXAMPLE0000000000000004", CID: "k-4", Chat: "c_1", From: "bob",
		Seq: 45, TS: testTS, Kind: chatd.EventReaction, Target: plain.ID, Emoji: "🎉", On: &off}
	edited := time.Date(2026, 12, 1, 8, 9, 10, 0, time.UTC)
	state := plain
	state.Body, state.EditedAt, state.Reactions = "hello again", &edited, map[string][]string{"🎉": {"alice"}}
	gone := plain
	gone.Body, gone.Deleted = "", true
	l := wire.Limits{LeaseMS: 10000, MaxAttempts: 3, MaxPending: 20, MaxBodyBytes: 4096, MaxFrameBytes: 25600,
		RatePerS: 50, RateBurst: 100, Credits: 64, PingIntervalMS: 10000, IdleTimeoutMS: 30000}
	return map[string][]byte{
		"hello":            wire.AppendHello(nil, "alice", "phone", &l),
		"msg_plain":        wire.AppendMsg(nil, &plain),
		"msg_meta":         wire.AppendMsg(nil, &withMeta),
		"msg_every_field":  wire.AppendMsg(nil, &full),
		"msg_edit":         wire.AppendMsg(nil, &edit),
		"msg_delete":       wire.AppendMsg(nil, &del),
		"msg_reaction_off": wire.AppendMsg(nil, &unreact),
		"msg_state_edited": wire.AppendMsg(nil, &state),
		"msg_state_delete": wire.AppendMsg(nil, &gone),
		"accepted":         wire.AppendAccepted(nil, &full),
		"rejected":         wire.AppendRejected(nil, "k-1", wire.CodeTooLarge, "body is 5000 bytes, the limit is 4096: too large"),
		"rejected_no_cid":  wire.AppendRejected(nil, "", wire.CodeInvalid, "frame has no type: invalid"),
		"receipt":          wire.AppendReceipt(nil, "c_1", "bob", plain.ID, 41),
		"pong":             wire.AppendPong(nil),
		"typing":           wire.AppendTyping(nil, "c_1", "alice"),
		"presence_online":  wire.AppendPresence(nil, "alice", true, time.Time{}),
		"presence_offline": wire.AppendPresence(nil, "alice", false, edited),
		"authed":           wire.AppendAuthed(nil, 1796000000),
	}
}

// goldenClientFrames are the client's frames of every type.
func goldenClientFrames() map[string][]byte {
	frames := map[string]wire.ClientFrame{
		"client_send":      {Type: wire.FrameSend, Chat: "c_1", CID: "k-1", Body: "hi <\"you\">"},
		"client_send_meta": {Type: wire.FrameSend, Chat: "c_1", CID: "k-1", Body: "hi", Meta: json.RawMessage(`{"a":1}`)},
		"client_ack":       {Type: wire.FrameAck, IDs: []string{"01JEXAMPLE0000000000000000", "01JEXAMPLE0000000000000001"}},
		"client_read":      {Type: wire.FrameRead, Chat: "c_1", Upto: "01JEXAMPLE0000000000000001"},
		"client_ping":      {Type: wire.FramePing},
		"client_auth":      {Type: wire.FrameAuth, Token: "eyJ.x.y"},
		"client_typing":    {Type: wire.FrameTyping, Chat: "c_1"},
		"client_edit":      {Type: wire.FrameEdit, Chat: "c_1", CID: "k-2", Target: "01JEXAMPLE0000000000000000", Body: "fixed"},
		"client_delete":    {Type: wire.FrameDelete, Chat: "c_1", CID: "k-3", Target: "01JEXAMPLE0000000000000000"},
		"client_react":     {Type: wire.FrameReact, Chat: "c_1", CID: "k-4", Target: "01JEXAMPLE0000000000000000", Emoji: "👍", On: true},
	}
	out := make(map[string][]byte, len(frames))
	for name, f := range frames {
		out[name] = wire.AppendClientFrame(nil, &f)
	}
	return out
}

// checkGolden compares got with testdata/golden/name.json, or rewrites the
// file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./pkg/wire -run Golden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n got %s\nwant %s", name, got, want)
	}
}

// The frames are byte for byte the ones in testdata/golden, written by the
// encoders before the message's JSON moved to one codec: refactoring must
// not change the wire.
func TestGoldenFrames(t *testing.T) {
	for name, data := range goldenServerFrames() {
		checkGolden(t, name, data)
	}
	for name, data := range goldenClientFrames() {
		checkGolden(t, name, data)
	}
}

// Every golden server frame decodes, and encoding what was decoded gives the
// same bytes back; a msg frame decodes to the message it was made of.
func TestGoldenServerFramesRoundTrip(t *testing.T) {
	for name, data := range goldenServerFrames() {
		var f wire.ServerFrame
		if err := wire.DecodeServerFrame(data, &f); err != nil {
			t.Fatalf("%s: %s does not decode: %v", name, data, err)
		}
		if got := encodeServerFrame(t, &f); !bytes.Equal(got, data) {
			t.Errorf("%s: re-encoded\n got %s\nwant %s", name, got, data)
		}
	}
	full := goldenMessage()
	var f wire.ServerFrame
	if err := wire.DecodeServerFrame(wire.AppendMsg(nil, &full), &f); err != nil {
		t.Fatal(err)
	}
	if got := f.Message; !reflect.DeepEqual(got, full) {
		t.Errorf("msg frame decodes to\n%+v, want\n%+v", got, full)
	}
}

// Every golden client frame decodes to the frame it was made of (the server
// checks the fields) and encodes back to the same bytes.
func TestGoldenClientFramesRoundTrip(t *testing.T) {
	for name, data := range goldenClientFrames() {
		f, err := wire.DecodeClientFrame(data, 1<<16)
		if err != nil {
			t.Fatalf("%s: %s does not decode: %v", name, data, err)
		}
		if got := wire.AppendClientFrame(nil, &f); !bytes.Equal(got, data) {
			t.Errorf("%s: re-encoded\n got %s\nwant %s", name, got, data)
		}
	}
}

// encodeServerFrame writes f with the server's encoder of its type.
func encodeServerFrame(t *testing.T, f *wire.ServerFrame) []byte {
	t.Helper()
	switch f.Type {
	case wire.FrameHello:
		return wire.AppendHello(nil, f.User, f.Device, &f.Limits)
	case wire.FrameMsg:
		m := f.Message
		return wire.AppendMsg(nil, &m)
	case wire.FrameAccepted:
		m := f.Message
		return wire.AppendAccepted(nil, &m)
	case wire.FrameRejected:
		return wire.AppendRejected(nil, f.CID, f.Code, f.Error)
	case wire.FrameReceipt:
		return wire.AppendReceipt(nil, f.Chat, f.User, f.Upto, f.Seq)
	case wire.FramePong:
		return wire.AppendPong(nil)
	case wire.FrameTyping:
		return wire.AppendTyping(nil, f.Chat, f.User)
	case wire.FramePresence:
		return wire.AppendPresence(nil, f.User, f.Online, f.LastSeen)
	case wire.FrameAuthed:
		return wire.AppendAuthed(nil, f.Exp)
	}
	t.Fatalf("no encoder for %q", f.Type)
	return nil
}
