package codec_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
)

// sameEnvelopeJSON fails unless EncodeEnvelope writes what json.Marshal
// writes for e, DecodeEnvelope reads that back as json.Unmarshal does, and
// AppendMessageJSON writes e's message as json.Marshal does.
func sameEnvelopeJSON(t *testing.T, e *chatd.Envelope) {
	t.Helper()
	want, wantErr := json.Marshal(e)
	got, err := codec.EncodeEnvelope(e)
	if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
		t.Fatalf("EncodeEnvelope:\n got %s, %v\nwant %s, %v", got, err, want, wantErr)
	}
	if err == nil {
		sameEnvelopeDecode(t, got)
	}
	// Appended after other bytes, as Share does; an error leaves them as
	// they were.
	got, err = codec.AppendEnvelope([]byte("x\n"), e)
	if (err == nil) != (wantErr == nil) || (err == nil && !bytes.Equal(got, append([]byte("x\n"), want...))) || (err != nil && string(got) != "x\n") {
		t.Fatalf("AppendEnvelope:\n got %q, %v\nwant x\\n%s, %v", got, err, want, wantErr)
	}
	want, wantErr = json.Marshal(&e.Message)
	got, err = codec.AppendMessageJSON([]byte("x"), &e.Message)
	if (err == nil) != (wantErr == nil) || (err == nil && !bytes.Equal(got, append([]byte("x"), want...))) {
		t.Fatalf("AppendMessageJSON:\n got %s, %v\nwant x%s, %v", got, err, want, wantErr)
	}
}

// sameEnvelopeDecode fails unless DecodeEnvelope(data) equals what
// json.Unmarshal makes of data, errors included.
func sameEnvelopeDecode(t *testing.T, data []byte) {
	t.Helper()
	var want chatd.Envelope
	wantErr := json.Unmarshal(data, &want)
	got, err := codec.DecodeEnvelope(data)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Fatalf("DecodeEnvelope(%s):\n got %+v, %v\nwant %+v, %v", data, got, err, want, wantErr)
	}
}

// Shapes the fast decoder takes and the ones it leaves to encoding/json
// decode exactly as encoding/json alone does.
func TestDecodeEnvelopeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"outbox_id":1,"msg":{"id":"m","cid":"k","chat":"c","from":"a","body":"hi","seq":3,"ts":"2026-11-30T19:00:00.123Z"},"device":"d","to":["a","b"]}`,
		` { "outbox_id" : -0 , "msg" : { "seq" : 01 } } `,
		`{"outbox_id":1.5}`, `{"outbox_id":1e3}`, `{"outbox_id":99999999999999999999}`,
		`{"msg":{"body":"\u003c\u0026\u2028\ud83d\ude00\ud800 \n\t\"\\\/"}}`,
		`{"msg":{"ts":"2026-11-30T19:00:00+05:30"}}`, `{"msg":{"ts":"yesterday"}}`, `{"msg":{"ts":null}}`,
		`{"msg":{"kind":"react","emoji":"👍","on":true,"target":"t"}}`, `{"msg":{"on":null}}`,
		`{"msg":{"meta":{"a":[1,{"b":"}"}]}}}`, `{"msg":{"meta":null}}`, `{"msg":{"meta":"s"}}`,
		`{"msg":{"edited_at":"2026-11-30T19:00:00Z","deleted":true,"reactions":{"x":["a"]}}}`,
		`{"msg":{"edited_at":"2026-11-30T19:00:00.5+01:00","deleted":true}}`, `{"msg":{"edited_at":null}}`, `{"msg":{"deleted":1}}`,
		`{"msg":{"id":"a"},"msg":{"cid":"b"}}`, `{"to":["a"],"to":["b","c"]}`, `{"to":[]}`, `{"to":null}`,
		`{"Outbox_ID":5}`, `{"MSG":{"ID":"x"}}`, `{"extra":1,"device":"d"}`,
		"{\"device\":\"\x94\"}", "{\"msg\":{\"body\":\"a\xffb\"}}",
		`{"device":"d"} x`, `{"device":"d"`, `[]`, `null`, ``, `{"to":["a",]}`,
	} {
		sameEnvelopeDecode(t, []byte(in))
	}
}

func FuzzEnvelopeJSON(f *testing.F) {
	for _, s := range []string{"hi", "<>&", "\x00\u2028\xff", `{"outbox_id":1,"msg":{"id":"m","ts":"2026-11-30T19:00:00Z"},"to":["a"]}`} {
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		sameEnvelopeDecode(t, []byte(s))
		on := n%2 == 0
		e := chatd.Envelope{
			OutboxID: n, Device: s, Recipients: []string{s, "b"},
			Message: chatd.Message{ID: s, CID: s, Chat: s, From: s, Body: s, Seq: -n, Kind: chatd.EventKind(s),
				Target: s, Emoji: s, On: &on, TS: time.Unix(n%(1<<34), n%1e9).UTC()},
		}
		if json.Valid([]byte(s)) && len(s) > 0 && (s[0] == '{' || s[0] == '[') {
			e.Message.Meta = json.RawMessage(s)
		}
		sameEnvelopeJSON(t, &e)
	})
}

func BenchmarkEnvelopeJSON(b *testing.B) {
	e := chatd.Envelope{
		OutboxID: 123456,
		Message: chatd.Message{ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", CID: "k-123", Chat: "c_42", From: "alice",
			Body: "a message of an ordinary length, sixty-four bytes or thereabouts", Seq: 4242,
			TS: time.Date(2026, 11, 30, 19, 0, 0, 123456789, time.UTC)},
		Device: "phone", Recipients: []string{"alice", "bob"},
	}
	data, _ := json.Marshal(&e)
	b.Run("encode", func(b *testing.B) {
		for range b.N {
			if _, err := codec.EncodeEnvelope(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/encoding_json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for range b.N {
			if _, err := codec.DecodeEnvelope(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/encoding_json", func(b *testing.B) {
		for range b.N {
			var got chatd.Envelope
			if err := json.Unmarshal(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// An envelope json.Marshal refuses (meta that is not JSON) is an error from
// AppendEnvelope too, and what was appended before stays as it was.
func TestAppendEnvelopeRefusalLeavesTheBuffer(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		e := chatd.Envelope{OutboxID: 1, Message: chatd.Message{ID: "m1", Chat: "c", From: "a", Meta: json.RawMessage(`{"bad`), Deleted: deleted}}
		got, err := codec.AppendEnvelope([]byte("x\n"), &e)
		if err == nil || string(got) != "x\n" {
			t.Fatalf("deleted %v: AppendEnvelope gave %q, %v; want the buffer as it was and an error", deleted, got, err)
		}
	}
}
