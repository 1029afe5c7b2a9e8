package codec_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
)

var update = flag.Bool("update", false, "rewrite the golden envelopes in testdata/golden")

// goldenEnvelopes are stream envelopes of every shape the relay publishes
// (a message with and without meta, an edit, a delete, a reaction on and
// off) and of the shapes left to encoding/json (a message's read state, an
// out-of-range time).
func goldenEnvelopes() map[string]*chatd.Envelope {
	ts := time.Date(2026, 12, 1, 8, 9, 10, 123456789, time.UTC)
	msg := chatd.Message{ID: "01JEXAMPLE0000000000000000", CID: "k-0", Chat: "c_1", From: "bob",
		Body: "hi \"you\" <b>&</b>\n\t\u2028\x01 😀", Seq: 41, TS: ts, Device: "phone"}
	env := func(m chatd.Message) *chatd.Envelope {
		return &chatd.Envelope{OutboxID: 7, Message: m, Device: m.Device, Recipients: []string{"alice", "bob"}}
	}
	withMeta := msg
	withMeta.Meta = json.RawMessage(`{"reply_to":"01JEXAMPLE","q":"<&>\u2028","n":1.50}`)
	edit := msg
	edit.ID, edit.CID, edit.Seq, edit.Body, edit.Kind, edit.Target = "01JEXAMPLE0000000000000002", "k-2", 42, "fixed", chatd.EventEdit, msg.ID
	del := msg
	del.ID, del.CID, del.Seq, del.Body, del.Kind, del.Target = "01JEXAMPLE0000000000000003", "k-3", 43, "", chatd.EventDelete, msg.ID
	on, off := true, false
	react := del
	react.ID, react.CID, react.Seq, react.Kind, react.Emoji, react.On = "01JEXAMPLE0000000000000004", "k-4", 44, chatd.EventReaction, "👍", &on
	unreact := react
	unreact.ID, unreact.CID, unreact.Seq, unreact.On = "01JEXAMPLE0000000000000005", "k-5", 45, &off
	state := msg
	state.EditedAt, state.Deleted, state.Reactions = &ts, true, map[string][]string{"👍": {"alice"}, "<3": nil}
	zoned := msg
	zoned.TS = time.Date(2026, 12, 1, 8, 9, 10, 0, time.FixedZone("", 5*3600+1800))

	nilTo, noTo, largest := env(msg), env(msg), env(msg)
	nilTo.Recipients, noTo.Recipients = nil, []string{}
	largest.OutboxID, largest.Message.Seq = math.MaxInt64, math.MaxInt64
	return map[string]*chatd.Envelope{
		"message":          env(msg),
		"message_meta":     env(withMeta),
		"edit":             env(edit),
		"delete":           env(del),
		"reaction_on":      env(react),
		"reaction_off":     env(unreact),
		"state_fields":     env(state),
		"zoned_time":       env(zoned),
		"recipients_nil":   nilTo,
		"recipients_empty": noTo,
		"largest_numbers":  largest,
	}
}

// The relay's envelopes are byte for byte the ones in testdata/golden,
// written by the encoder before it moved out of the root package (nodes of
// the old and the new build share one stream). Each decodes to the envelope
// it was made of, less the message's Device (not part of its JSON), and
// EnvelopeSize is its length.
func TestGoldenEnvelopes(t *testing.T) {
	for name, e := range goldenEnvelopes() {
		got, err := codec.EncodeEnvelope(e)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		path := filepath.Join("testdata", "golden", "envelope_"+name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run Golden -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s changed:\n got %s\nwant %s", name, got, want)
		}
		if n := codec.EnvelopeSize(e); n != len(want) {
			t.Errorf("%s: EnvelopeSize %d, want %d", name, n, len(want))
		}
		back, err := codec.DecodeEnvelope(want)
		if err != nil {
			t.Fatalf("%s: %s does not decode: %v", name, want, err)
		}
		sent := *e
		sent.Message.Device = ""
		if sent.Message.Meta != nil {
			var b bytes.Buffer
			_ = json.Compact(&b, sent.Message.Meta)
			sent.Message.Meta = b.Bytes()
		}
		if !sameEnvelope(back, sent) {
			t.Errorf("%s: decodes to\n%+v, want\n%+v", name, back, sent)
		}
	}
}

// sameEnvelope compares envelopes with times compared by instant and
// offset (a decoded zone has no name) and meta by its JSON value.
func sameEnvelope(a, b chatd.Envelope) bool {
	ta, tb := a.Message.TS, b.Message.TS
	_, oa := ta.Zone()
	_, ob := tb.Zone()
	if !ta.Equal(tb) || oa != ob {
		return false
	}
	var ma, mb any
	_ = json.Unmarshal(a.Message.Meta, &ma)
	_ = json.Unmarshal(b.Message.Meta, &mb)
	if !reflect.DeepEqual(ma, mb) {
		return false
	}
	ea, eb := a.Message.EditedAt, b.Message.EditedAt
	if (ea == nil) != (eb == nil) || ea != nil && !ea.Equal(*eb) {
		return false
	}
	a.Message.TS, b.Message.TS, a.Message.Meta, b.Message.Meta = time.Time{}, time.Time{}, nil, nil
	a.Message.EditedAt, b.Message.EditedAt = nil, nil
	return reflect.DeepEqual(a, b)
}
