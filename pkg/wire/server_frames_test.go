package wire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

var testTS = time.Date(2025, 3, 4, 5, 6, 7, 890123000, time.UTC)

// The server's encoders and the client's decoder agree on every server
// frame.
func TestServerFrameRoundTrip(t *testing.T) {
	m := chatd.Message{ID: "01HZX", CID: "k-1", Chat: "c_1", From: "alice", Body: "hi \"x\"\n", Seq: 42, TS: testTS}
	l := wire.Limits{LeaseMS: 10000, MaxAttempts: 3, MaxPending: 20, MaxBodyBytes: 4096, MaxFrameBytes: 25600,
		RatePerS: 50, RateBurst: 100, Credits: 64, PingIntervalMS: 10000, IdleTimeoutMS: 30000}
	tests := []struct {
		name string
		data []byte
		want wire.ServerFrame
	}{
		{"hello", wire.AppendHello(nil, "alice", "phone", &l),
			wire.ServerFrame{Type: wire.FrameHello, User: "alice", Device: "phone", Limits: l}},
		{"accepted", wire.AppendAccepted(nil, &m),
			wire.ServerFrame{Type: wire.FrameAccepted, Message: chatd.Message{CID: m.CID, ID: m.ID, Seq: m.Seq, TS: m.TS}}},
		{"rejected", wire.AppendRejected(nil, "k-1", wire.CodeTooLarge, "body is \"big\""),
			wire.ServerFrame{Type: wire.FrameRejected, Message: chatd.Message{CID: "k-1"}, Code: wire.CodeTooLarge, Error: "body is \"big\""}},
		{"rejected without cid", wire.AppendRejected(nil, "", wire.CodeInvalid, "no"),
			wire.ServerFrame{Type: wire.FrameRejected, Code: wire.CodeInvalid, Error: "no"}},
		{"msg", wire.AppendMsg(nil, &m),
			wire.ServerFrame{Type: wire.FrameMsg, Message: m}},
		{"receipt", wire.AppendReceipt(nil, "c_1", "bob", "01HZX", 7),
			wire.ServerFrame{Type: wire.FrameReceipt, Message: chatd.Message{Chat: "c_1", Seq: 7}, User: "bob", Upto: "01HZX"}},
		{"pong", wire.AppendPong(nil), wire.ServerFrame{Type: wire.FramePong}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got wire.ServerFrame
			if err := wire.DecodeServerFrame(tt.data, &got); err != nil {
				t.Fatalf("%s does not decode: %v", tt.data, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: got %+v, want %+v", tt.data, got, tt.want)
			}
		})
	}
}

// The server's frames are the bytes pkg/api wrote before this package
// existed (the wire must not change when code moves).
func TestServerFramesExactBytes(t *testing.T) {
	m := chatd.Message{ID: "01HZX", CID: "k", Chat: "c", From: "bob", Body: "a\"b\u2028<", Seq: 7, TS: time.Date(2025, 1, 1, 0, 0, 0, 1000, time.UTC)}
	l := wire.Limits{LeaseMS: 1, MaxAttempts: 2, MaxPending: 3, MaxBodyBytes: 4, MaxFrameBytes: 5,
		RatePerS: 6, RateBurst: 7, Credits: 8, PingIntervalMS: 9, IdleTimeoutMS: 10}
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"msg", wire.AppendMsg(nil, &m),
			`{"type":"msg","id":"01HZX","cid":"k","chat":"c","from":"bob","body":"a\"b\u2028<","seq":7,"ts":"2025-01-01T00:00:00.000001Z"}`},
		{"accepted", wire.AppendAccepted(nil, &m), `{"type":"accepted","cid":"k","id":"01HZX","seq":7,"ts":"2025-01-01T00:00:00.000001Z"}`},
		{"rejected", wire.AppendRejected(nil, "k", wire.CodeRateLimited, "slow down"), `{"type":"rejected","cid":"k","code":"rate_limited","error":"slow down"}`},
		{"receipt", wire.AppendReceipt(nil, "c", "u", "m", 3), `{"type":"receipt","chat":"c","user":"u","upto":"m","seq":3}`},
		{"pong", wire.AppendPong(nil), `{"type":"pong"}`},
		{"hello", wire.AppendHello(nil, "u", "d", &l),
			`{"type":"hello","user":"u","device":"d","limits":{"lease_ms":1,"max_attempts":2,"max_pending":3,"max_body_bytes":4,` +
				`"max_frame_bytes":5,"rate_per_s":6,"rate_burst":7,"credits":8,"ping_interval_ms":9,"idle_timeout_ms":10}}`},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestAppendMsgRoundTrip(t *testing.T) {
	bodies := []string{"hi", "a\"b\\c", "line\nbreak\ttab\r", "\x00\x01\x1f", "é✓😀", "\u2028\u2029", "<script>&amp;"}
	for _, body := range bodies {
		m := chatd.Message{ID: "01HZX", CID: "k-1", Chat: "c_1", From: "alice", Body: body, Seq: 42, TS: testTS}
		var f wire.ServerFrame
		if err := wire.DecodeServerFrame(wire.AppendMsg(nil, &m), &f); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		if f.Type != wire.FrameMsg || !reflect.DeepEqual(f.Message, m) {
			t.Errorf("body %q: got %+v, want %+v", body, f.Message, m)
		}
	}
}

// Events and a message's state go out as encoding/json would write them and
// parse back to the same Message.
func TestAppendMsgEventsMatchEncodingJSON(t *testing.T) {
	on, at := false, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, m := range []chatd.Message{
		{ID: "01A", CID: "k", Chat: "c", From: "bob", Body: "v2", Seq: 2, TS: testTS, Kind: chatd.EventEdit, Target: "01Z"},
		{ID: "01A", CID: "k", Chat: "c", From: "bob", Seq: 3, TS: testTS, Kind: chatd.EventReaction, Target: "01Z", Emoji: "👍", On: &on},
		{ID: "01A", CID: "k", Chat: "c", From: "bob", Body: "x", Seq: 1, TS: testTS, Meta: []byte(`{"a":[1.50,"<&>"],"b":{"c":null}}`),
			EditedAt: &at, Reactions: map[string][]string{"👍": {"a", "b"}, "❤": {"c"}}},
		{ID: "01A", CID: "k", Chat: "c", From: "bob", Seq: 1, TS: testTS, Deleted: true},
	} {
		std, err := json.Marshal(struct {
			Type string `json:"type"`
			chatd.Message
		}{"msg", m})
		if err != nil {
			t.Fatal(err)
		}
		got := wire.AppendMsg(nil, &m)
		if !sameJSON(t, got, std) {
			t.Errorf("got %s, want %s (encoding/json)", got, std)
		}
		var f wire.ServerFrame
		if err := wire.DecodeServerFrame(got, &f); err != nil || !reflect.DeepEqual(f.Message, m) {
			t.Errorf("%s: got %+v (%v), want %+v", got, f.Message, err, m)
		}
	}
}

func TestAppendMsgMatchesEncodingJSON(t *testing.T) {
	m := chatd.Message{ID: "01HZX", CID: "k", Chat: "c", From: "bob", Body: "x\"y\n\u2028", Seq: 7,
		TS: time.Date(2025, 1, 1, 0, 0, 0, 1000, time.UTC)}
	std, err := json.Marshal(struct {
		Type string `json:"type"`
		chatd.Message
	}{"msg", m})
	if err != nil {
		t.Fatal(err)
	}
	if got := wire.AppendMsg(nil, &m); !sameJSON(t, got, std) {
		t.Errorf("got %s, want %s (encoding/json)", got, std)
	}
}

func TestDecodeServerFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    wire.ServerFrame
		wantErr error
	}{
		{"unknown type is not an error", `{"type":"confetti","x":1}`, wire.ServerFrame{Type: "confetti"}, nil},
		{"v2 presence", `{"type":"presence","user":"bob","online":false,"last_seen":"2025-01-01T00:00:00Z"}`,
			wire.ServerFrame{Type: wire.FramePresence, User: "bob", LastSeen: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}, nil},
		{"v2 receipt with seq", `{"type":"receipt","chat":"c","user":"u","upto":"m","seq":5}`,
			wire.ServerFrame{Type: wire.FrameReceipt, Message: chatd.Message{Chat: "c", Seq: 5}, User: "u", Upto: "m"}, nil},
		{"v2 authed", `{"type":"authed","exp":1767225600}`, wire.ServerFrame{Type: wire.FrameAuthed, Exp: 1767225600}, nil},
		{"no type", `{}`, wire.ServerFrame{}, nil},
		{"not JSON", `pong`, wire.ServerFrame{}, wire.ErrProtocol},
		{"empty", ``, wire.ServerFrame{}, wire.ErrProtocol},
		{"truncated", `{"type":"msg","id":"`, wire.ServerFrame{}, wire.ErrProtocol},
		{"array", `[]`, wire.ServerFrame{}, wire.ErrProtocol},
		{"seq not a number", `{"type":"msg","seq":"1"}`, wire.ServerFrame{}, wire.ErrProtocol},
		{"ts not a time", `{"type":"msg","ts":"yesterday"}`, wire.ServerFrame{}, wire.ErrProtocol},
		{"limits not an object", `{"type":"hello","limits":5}`, wire.ServerFrame{}, wire.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A frame decoded before must leave nothing behind.
			got := wire.ServerFrame{Type: wire.FrameMsg, Message: chatd.Message{Body: "stale", Seq: 9}, Limits: wire.Limits{Credits: 1}}
			err := wire.DecodeServerFrame([]byte(tt.in), &got)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// wireMsg is the msg frame as a plain JSON parser sees it.
type wireMsg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	CID  string `json:"cid"`
	Chat string `json:"chat"`
	From string `json:"from"`
	Body string `json:"body"`
	Seq  int64  `json:"seq"`
	TS   string `json:"ts"`
}

func decodeMsg(t testing.TB, b []byte) wireMsg {
	t.Helper()
	var w wireMsg
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("msg frame %q is not JSON: %v", b, err)
	}
	return w
}

func BenchmarkAppendMsg(b *testing.B) {
	for _, size := range []int{16, 256, 4096} {
		m := chatd.Message{ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", CID: "cid-123", Chat: "chat_abc", From: "alice",
			Body: strings.Repeat("héllo \"w\" ", size/10+1)[:size], Seq: 123456, TS: time.Now().UTC()}
		b.Run("body"+strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = wire.AppendMsg(buf[:0], &m)
			}
			b.SetBytes(int64(len(buf)))
		})
		b.Run("body"+strconv.Itoa(size)+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			v := struct {
				Type string `json:"type"`
				chatd.Message
			}{"msg", m}
			for b.Loop() {
				if _, err := json.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendAccepted(b *testing.B) {
	m := chatd.Message{ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", CID: "cid-123", Seq: 123456, TS: time.Now().UTC()}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = wire.AppendAccepted(buf[:0], &m)
	}
}

func BenchmarkDecodeServerFrame(b *testing.B) {
	for _, size := range []int{16, 256, 4096} {
		in := []byte(`{"type":"msg","id":"01HZX6Q8ZK5J0Y3W2V1T0S9R8Q","cid":"cid-123","chat":"chat_abc","from":"alice","body":"` +
			strings.Repeat("x", size) + `","seq":123456,"ts":"2026-11-30T19:58:00.123456789Z"}`)
		b.Run("msg"+strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			var f wire.ServerFrame
			for b.Loop() {
				if err := wire.DecodeServerFrame(in, &f); err != nil {
					b.Fatal(err)
				}
				_ = f.Message
			}
		})
	}
}

// The server encodes every msg and accepted frame into a fresh buffer
// (nil dst): each must be one allocation, not one per growth of the buffer.
func TestServerFramesFromNothingAllocateOnce(t *testing.T) {
	m := chatd.Message{ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", CID: "c-00000042-0000001234", Chat: "d-alice-bob-0123456789",
		From: "user-000123", Body: strings.Repeat("a message body ", 5), Seq: 123456, TS: time.Now().UTC()}
	frames := map[string]func() []byte{
		"msg":      func() []byte { return wire.AppendMsg(nil, &m) },
		"accepted": func() []byte { return wire.AppendAccepted(nil, &m) },
	}
	for name, frame := range frames {
		if n := testing.AllocsPerRun(100, func() { _ = frame() }); n != 1 {
			t.Errorf("%s frame from nil: %v allocations, want 1", name, n)
		}
	}
}
