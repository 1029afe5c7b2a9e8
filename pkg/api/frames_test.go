package api_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
)

const testMaxFrame = 1024

func TestDecodeFrame(t *testing.T) {
	long := strings.Repeat("a", chatd.MaxCIDLen+1)
	tests := []struct {
		name    string
		in      string
		want    api.ClientFrame
		wantErr error
	}{
		{"send", `{"type":"send","chat":"c1","cid":"k1","body":"hi"}`,
			api.ClientFrame{Type: api.FrameSend, Chat: "c1", CID: "k1", Body: "hi"}, nil},
		{"send with unknown field", `{"type":"send","chat":"c1","cid":"k1","body":"hi","trace":"x"}`,
			api.ClientFrame{Type: api.FrameSend, Chat: "c1", CID: "k1", Body: "hi"}, nil},
		{"send escaped body", `{"type":"send","chat":"c1","cid":"k1","body":"a\"\n\u00e9"}`,
			api.ClientFrame{Type: api.FrameSend, Chat: "c1", CID: "k1", Body: "a\"\né"}, nil},
		{"send without cid", `{"type":"send","chat":"c1","body":"hi"}`, api.ClientFrame{Type: api.FrameSend}, chatd.ErrInvalid},
		{"send with bad cid", `{"type":"send","chat":"c1","cid":"a b","body":"hi"}`, api.ClientFrame{Type: api.FrameSend, CID: "a b"}, chatd.ErrInvalid},
		{"send with long cid", `{"type":"send","chat":"c1","cid":"` + long + `","body":"hi"}`, api.ClientFrame{Type: api.FrameSend, CID: long}, chatd.ErrInvalid},
		{"send without chat", `{"type":"send","cid":"k1","body":"hi"}`, api.ClientFrame{Type: api.FrameSend, CID: "k1"}, chatd.ErrInvalid},
		{"send with null chat", `{"type":"send","chat":null,"cid":"k1","body":"hi"}`, api.ClientFrame{Type: api.FrameSend, CID: "k1"}, chatd.ErrInvalid},
		{"send without body", `{"type":"send","chat":"c1","cid":"k1"}`, api.ClientFrame{Type: api.FrameSend, CID: "k1"}, chatd.ErrInvalid},
		{"send with empty body", `{"type":"send","chat":"c1","cid":"k1","body":""}`, api.ClientFrame{Type: api.FrameSend, CID: "k1"}, chatd.ErrInvalid},
		{"send with numeric body", `{"type":"send","chat":"c1","cid":"k1","body":5}`, api.ClientFrame{Type: api.FrameSend, CID: "k1"}, chatd.ErrInvalid},
		{"ack", `{"type":"ack","ids":["01J0000000000000000000000A","x"]}`,
			api.ClientFrame{Type: api.FrameAck, IDs: []string{"01J0000000000000000000000A", "x"}}, nil},
		{"ack without ids", `{"type":"ack"}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"ack with empty ids", `{"type":"ack","ids":[]}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"ack with bad id", `{"type":"ack","ids":["ok","not ok"]}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"ack with numeric id", `{"type":"ack","ids":[1]}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"read", `{"type":"read","chat":"c1","upto":"m1"}`, api.ClientFrame{Type: api.FrameRead, Chat: "c1", Upto: "m1"}, nil},
		{"read without upto", `{"type":"read","chat":"c1"}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"read without chat", `{"type":"read","upto":"m1"}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"ping", `{"type":"ping"}`, api.ClientFrame{Type: api.FramePing}, nil},
		{"unknown type", `{"type":"shout"}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"empty type", `{"type":""}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"no type", `{"chat":"c1"}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"numeric type", `{"type":1}`, api.ClientFrame{}, chatd.ErrInvalid},
		{"array", `[1,2]`, api.ClientFrame{}, chatd.ErrInvalid},
		{"string", `"send"`, api.ClientFrame{}, chatd.ErrInvalid},
		{"null", `null`, api.ClientFrame{}, chatd.ErrInvalid},
		{"not JSON", `hello`, api.ClientFrame{}, api.ErrProtocol},
		{"truncated JSON", `{"type":"send"`, api.ClientFrame{}, api.ErrProtocol},
		{"empty", ``, api.ClientFrame{}, api.ErrProtocol},
		{"trailing garbage", `{"type":"ping"} x`, api.ClientFrame{}, api.ErrProtocol},
		{"invalid UTF-8", "{\"type\":\"send\",\"chat\":\"c\",\"cid\":\"k\",\"body\":\"\xff\"}", api.ClientFrame{}, api.ErrProtocol},
		{"over max frame", `{"type":"send","chat":"c1","cid":"k1","body":"` + strings.Repeat("x", testMaxFrame) + `"}`, api.ClientFrame{}, api.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := api.DecodeFrame([]byte(tt.in), testMaxFrame)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeFrameExactlyAtLimit(t *testing.T) {
	base := `{"type":"send","chat":"c1","cid":"k1","body":""}`
	in := `{"type":"send","chat":"c1","cid":"k1","body":"` + strings.Repeat("x", testMaxFrame-len(base)) + `"}`
	if len(in) != testMaxFrame {
		t.Fatalf("test frame is %d bytes, want %d", len(in), testMaxFrame)
	}
	if _, err := api.DecodeFrame([]byte(in), testMaxFrame); err != nil {
		t.Fatalf("frame of exactly max_frame_bytes: %v", err)
	}
}

// wireMsg is the msg frame as a client decodes it.
type wireMsg struct {
	Type string    `json:"type"`
	ID   string    `json:"id"`
	CID  string    `json:"cid"`
	Chat string    `json:"chat"`
	From string    `json:"from"`
	Body string    `json:"body"`
	Seq  int64     `json:"seq"`
	TS   time.Time `json:"ts"`
}

func TestAppendMsgFrameRoundTrip(t *testing.T) {
	bodies := []string{"hi", "a\"b\\c", "line\nbreak\ttab\r", "\x00\x01\x1f", "é✓😀", "\u2028\u2029", "<script>&amp;"}
	for _, body := range bodies {
		m := chatd.Message{ID: "01HZX", CID: "k-1", Chat: "c_1", From: "alice", Body: body, Seq: 42,
			TS: time.Date(2025, 3, 4, 5, 6, 7, 890123000, time.UTC)}
		got := decodeMsg(t, api.AppendMsgFrame(nil, &m))
		want := wireMsg{Type: "msg", ID: m.ID, CID: m.CID, Chat: m.Chat, From: m.From, Body: body, Seq: 42, TS: m.TS}
		if got != want {
			t.Errorf("body %q: got %+v, want %+v", body, got, want)
		}
	}
}

func TestAppendMsgFrameMatchesEncodingJSON(t *testing.T) {
	m := chatd.Message{ID: "01HZX", CID: "k", Chat: "c", From: "bob", Body: "x\"y\n\u2028", Seq: 7,
		TS: time.Date(2025, 1, 1, 0, 0, 0, 1000, time.UTC)}
	var viaJSON, viaAppend map[string]any
	std, err := json.Marshal(struct {
		Type string `json:"type"`
		chatd.Message
	}{"msg", m})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(std, &viaJSON); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(api.AppendMsgFrame(nil, &m), &viaAppend); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(viaJSON, viaAppend) {
		t.Errorf("got %v, want %v (encoding/json)", viaAppend, viaJSON)
	}
}

func decodeMsg(t testing.TB, b []byte) wireMsg {
	t.Helper()
	var w wireMsg
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("msg frame %q is not JSON: %v", b, err)
	}
	return w
}

// FuzzDecodeFrame: the decoder never panics; anything it accepts re-encodes
// (with encoding/json) to a frame it decodes to the same value; any string
// the msg encoder is given comes back intact from a JSON parser.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"send","chat":"c1","cid":"k1","body":"hi"}`,
		`{"type":"ack","ids":["a","b"]}`,
		`{"type":"read","chat":"c1","upto":"m1"}`,
		`{"type":"ping"}`, `{"type":"x"}`, `[]`, `nul`, "\xff", `{"type":"send","body":"\u2028\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := api.DecodeFrame(data, testMaxFrame)
		if err == nil {
			again, err := api.DecodeFrame(reencode(t, got), 1<<20)
			if err != nil {
				t.Fatalf("re-encoded %+v does not decode: %v", got, err)
			}
			if !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip: got %+v, want %+v", again, got)
			}
		} else if !errors.Is(err, api.ErrProtocol) && !errors.Is(err, chatd.ErrInvalid) {
			t.Fatalf("error %v is neither protocol nor invalid", err)
		}
		s := string(data)
		m := chatd.Message{ID: s, CID: s, Chat: s, From: s, Body: s, Seq: int64(len(s)), TS: time.Unix(0, int64(len(s))).UTC()}
		w := decodeMsg(t, api.AppendMsgFrame(nil, &m))
		// Each invalid byte becomes one U+FFFD, as in encoding/json.
		want := string([]rune(s))
		if w.Body != want || w.ID != want || w.From != want {
			t.Fatalf("msg encoding of %q decoded to %q", s, w.Body)
		}
	})
}

func reencode(t *testing.T, f api.ClientFrame) []byte {
	t.Helper()
	m := map[string]any{"type": string(f.Type)}
	switch f.Type {
	case api.FrameSend:
		m["chat"], m["cid"], m["body"] = f.Chat, f.CID, f.Body
	case api.FrameAck:
		m["ids"] = f.IDs
	case api.FrameRead:
		m["chat"], m["upto"] = f.Chat, f.Upto
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func BenchmarkAppendMsgFrame(b *testing.B) {
	for _, size := range []int{16, 256, 4096} {
		m := chatd.Message{ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", CID: "cid-123", Chat: "chat_abc", From: "alice",
			Body: strings.Repeat("héllo \"w\" ", size/10+1)[:size], Seq: 123456, TS: time.Now().UTC()}
		b.Run("body"+strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = api.AppendMsgFrame(buf[:0], &m)
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
