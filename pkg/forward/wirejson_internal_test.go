package forward

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/chatd/chatd"
)

// sameDecode fails unless decodeRequest and decodeReply read data as
// json.Unmarshal does, errors included.
func sameDecode(t *testing.T, data []byte) {
	t.Helper()
	var wantReq request
	wantErr := json.Unmarshal(data, &wantReq)
	gotReq, err := decodeRequest(data)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || (err == nil && !reflect.DeepEqual(gotReq, wantReq)) {
		t.Fatalf("decodeRequest(%q):\n got %+v, %v\nwant %+v, %v", data, gotReq, err, wantReq, wantErr)
	}
	var wantRep reply
	wantErr = json.Unmarshal(data, &wantRep)
	gotRep, err := decodeReply(data)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || (err == nil && !reflect.DeepEqual(gotRep, wantRep)) {
		t.Fatalf("decodeReply(%q):\n got %+v, %v\nwant %+v, %v", data, gotRep, err, wantRep, wantErr)
	}
}

// roundTrips fails unless what appendJSON writes for r and rep is read
// back equal, by encoding/json and by the fast readers.
func roundTrips(t *testing.T, r request, rep reply) {
	t.Helper()
	data, err := r.appendJSON(nil)
	if err != nil {
		t.Fatalf("encode %+v: %v", r, err)
	}
	var back request
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("request %s read back as %+v, %v; want %+v", data, back, err, r)
	}
	sameDecode(t, data)
	data = rep.appendJSON(nil)
	var backRep reply
	if err := json.Unmarshal(data, &backRep); err != nil || !reflect.DeepEqual(backRep, rep) {
		t.Fatalf("reply %s read back as %+v, %v; want %+v", data, backRep, err, rep)
	}
	sameDecode(t, data)
}

func wireSample(s string, n int64) (request, reply) {
	on := n%2 == 0
	at := time.Unix(n%(1<<34), n%1e9).UTC()
	snd := send{Chat: s, From: s, Device: s, CID: s, Body: s, Kind: chatd.EventKind(s), Target: s, Emoji: s, On: on, System: !on}
	m := &chatd.Message{ID: s, CID: s, Chat: s, From: s, Body: s, Seq: n, TS: at, Kind: chatd.EventKind(s),
		Target: s, Emoji: s, On: &on}
	if json.Valid([]byte(s)) && len(s) > 0 && (s[0] == '{' || s[0] == '[') {
		snd.Meta, m.Meta = json.RawMessage(s), json.RawMessage(s)
	}
	return request{Sends: []send{snd, {Chat: "c", From: "a", CID: "k"}}},
		reply{Outcomes: []outcome{
			{Message: m, Device: s, OutboxID: n, Recipients: []string{s, "b"}, Duplicate: on},
			{ErrKind: s, Err: s},
			{},
		}}
}

// The batch and its answer read back as they were written, also by a node
// that reads them with encoding/json.
func TestWireRoundTrips(t *testing.T) {
	for _, s := range []string{"hi", "<a>&amp;</a>", "héllo 👍 \u2028 日本", "\x01\t\n\"\\", `{"reply_to":"x<y>"}`, `[1, {"a" : null}]`, ""} {
		r, rep := wireSample(s, 42)
		roundTrips(t, r, rep)
	}
	edited := time.Unix(1e9, 0).UTC()
	roundTrips(t, request{Sends: []send{}}, reply{Outcomes: []outcome{{Message: &chatd.Message{ID: "m", EditedAt: &edited, Deleted: true}}}})
	// Invalid UTF-8 is written as U+FFFD, as encoding/json writes it.
	data, err := (&request{Sends: []send{{Chat: "c\xff"}}}).appendJSON(nil)
	if got, _ := decodeRequest(data); err != nil || got.Sends[0].Chat != "c\uFFFD" {
		t.Fatalf("invalid UTF-8 read back as %q (%v), want %q", got.Sends[0].Chat, err, "c\uFFFD")
	}
	if _, err := (&request{Sends: []send{{Meta: json.RawMessage(`{"a":`)}}}).appendJSON(nil); err == nil {
		t.Fatal("a send whose meta is not JSON was encoded")
	}
}

// Shapes the fast readers take and the ones they leave to encoding/json
// read exactly as encoding/json alone reads them.
func TestWireDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"sends":[{"chat":"c","from":"a","cid":"k","body":"hi","meta":{"a":[1]},"on":true}]}`,
		`{"sends":[{"chat":"c"}],"sends":[{"from":"a"}]}`, `{"sends":null}`, `{"sends":[null]}`, `{"SENDS":[]}`,
		`{"sends":[{"on":1}]}`, `{"sends":[{"meta":"s"}]}`, `{"sends":[{"chat":"a\ud83d\ude00\u0000"}]}`,
		`{"outcomes":[{"msg":{"id":"m","seq":3,"ts":"2026-11-30T19:00:00.5+01:00"},"device":"d","outbox_id":7,"recipients":["a"]}]}`,
		`{"outcomes":[{"msg":{"id":"m"},"msg":{"cid":"k"}}]}`, `{"outcomes":[{"msg":null}]}`,
		`{"outcomes":[{"msg":{"reactions":{"x":["a"]}}}]}`, `{"outcomes":[{"outbox_id":1.5}]}`,
		`{"outcomes":[{"err_kind":"closed","err":"x"}]}`, `{"outcomes":[],"outcomes":[{}]}`,
		"{\"sends\":[{\"chat\":\"\xff\"}]}", `{"sends":[{"chat":"c"}]} x`, `{"sends":[`, `[]`, `null`, ``,
	} {
		sameDecode(t, []byte(in))
	}
}

func FuzzWireDecode(f *testing.F) {
	for _, s := range []string{"hi", "<>&", "\x00\u2028\xff", `{"sends":[{"chat":"c","on":true}]}`, `{"outcomes":[{"msg":{"id":"m"}}]}`} {
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		sameDecode(t, []byte(s))
		r, rep := wireSample(s, n)
		data, err := r.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		sameDecode(t, data)
		sameDecode(t, rep.appendJSON(nil))
	})
}

// BenchmarkWire is a batch of 22 sends (a cluster batch at 2,000 msg/s) and
// its answer, each way, against encoding/json.
func BenchmarkWire(b *testing.B) {
	const n = 22
	r, rep := request{}, reply{}
	for i := range n {
		r.Sends = append(r.Sends, send{Chat: "c_42", From: "alice", Device: "phone", CID: fmt.Sprint("k-", i),
			Body: "a message of an ordinary length, sixty-four bytes or thereabouts"})
		rep.Outcomes = append(rep.Outcomes, outcome{Message: &chatd.Message{ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", CID: "k-1",
			Chat: "c_42", From: "alice", Body: "a message of an ordinary length, sixty-four bytes or thereabouts", Seq: 4242,
			TS: time.Date(2026, 11, 30, 19, 0, 0, 123456789, time.UTC)}, Device: "phone", OutboxID: 99, Recipients: []string{"alice", "bob"}})
	}
	reqData, _ := r.appendJSON(nil)
	repData := rep.appendJSON(nil)
	b.Run("fast", func(b *testing.B) {
		for range b.N {
			if _, err := r.appendJSON(nil); err != nil {
				b.Fatal(err)
			}
			if _, err := decodeRequest(reqData); err != nil {
				b.Fatal(err)
			}
			_ = rep.appendJSON(nil)
			if _, err := decodeReply(repData); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(&r); err != nil {
				b.Fatal(err)
			}
			var r2 request
			if err := json.Unmarshal(reqData, &r2); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(&rep); err != nil {
				b.Fatal(err)
			}
			var rep2 reply
			if err := json.Unmarshal(repData, &rep2); err != nil {
				b.Fatal(err)
			}
		}
	})
}
