package api

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// clientFrame is a masked client frame: header byte b0 (FIN, RSV, opcode)
// and payload, with the length encoded as the payload's size asks.
func clientFrame(b0 byte, payload []byte) []byte {
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	var f []byte
	switch n := len(payload); {
	case n <= 125:
		f = append(f, b0, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, b0, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, b0, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	f = append(f, key[:]...)
	for i, c := range payload {
		f = append(f, c^key[i%4])
	}
	return f
}

// parsed is one event and the bytes it carries.
type parsed struct {
	ev   frameEvent
	data string
}

// parseAll feeds stream to a parser in chunks of size n and collects every
// event, stopping at the first error.
func parseAll(f *frameParser, stream []byte, n int) ([]parsed, error) {
	var got []parsed
	for len(stream) > 0 {
		chunk := stream[:min(n, len(stream))]
		stream = stream[len(chunk):]
		for len(chunk) > 0 {
			used, ev, err := f.parse(chunk)
			chunk = chunk[used:]
			if err != nil {
				return got, err
			}
			switch ev {
			case evNone:
				if len(chunk) > 0 {
					return got, fmt.Errorf("evNone with %d bytes left", len(chunk))
				}
			case evText, evBinary:
				got = append(got, parsed{ev, string(f.msg)})
			case evPing, evPong, evClose:
				got = append(got, parsed{ev, string(f.ctrl)})
			default:
				got = append(got, parsed{ev, ""})
			}
		}
	}
	return got, nil
}

// Frames are read the same whichever way the socket's reads cut them: one
// byte at a time, at odd sizes, or all at once; fragments are assembled
// around the control frames between them, and every length form unmasked.
func TestFramesParsedWhateverTheReadsCut(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 300) // 4,800 bytes: a 16-bit length
	huge := strings.Repeat("x", 70_000)             // a 64-bit length
	var stream []byte
	stream = append(stream, clientFrame(0x81, []byte(`{"type":"ping"}`))...)
	stream = append(stream, clientFrame(0x01, []byte(`{"type":`))...) // a text message's first fragment
	stream = append(stream, clientFrame(0x89, []byte("are you there"))...)
	stream = append(stream, clientFrame(0x00, []byte(`"send",`))...)
	stream = append(stream, clientFrame(0x8a, nil)...)
	stream = append(stream, clientFrame(0x80, []byte(`"body":"x"}`))...)
	stream = append(stream, clientFrame(0x81, []byte(long))...)
	stream = append(stream, clientFrame(0x82, []byte{0, 1, 2})...)
	stream = append(stream, clientFrame(0x81, []byte(huge))...)
	stream = append(stream, clientFrame(0x81, nil)...)
	stream = append(stream, clientFrame(0x88, []byte{0x03, 0xe8, 'b', 'y', 'e'})...)
	want := []parsed{
		{evText, `{"type":"ping"}`},
		{evPing, "are you there"},
		{evPong, ""},
		{evText, `{"type":"send","body":"x"}`},
		{evText, long},
		{evBinary, "\x00\x01\x02"},
		{evText, huge},
		{evText, ""},
		{evClose, "\x03\xe8bye"},
	}
	for _, n := range []int{1, 2, 3, 7, 100, 4096, len(stream)} {
		f := &frameParser{limit: 100_000}
		got, err := parseAll(f, stream, n)
		if err != nil {
			t.Fatalf("reads of %d bytes: %v", n, err)
		}
		if len(got) != len(want) {
			t.Fatalf("reads of %d bytes: %d events, want %d", n, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("reads of %d bytes: event %d is %d (%.40q), want %d (%.40q)",
					n, i, got[i].ev, got[i].data, want[i].ev, want[i].data)
			}
		}
	}
}

// A message over the limit is reported once, as soon as a header shows it,
// and skipped without being kept; the frames after it are read as usual.
// Dropped messages (a closing session's) are skipped whole, and control
// frames are still read among them.
func TestFramesOverTheLimitOrDroppedAreSkipped(t *testing.T) {
	over := append(clientFrame(0x01, bytes.Repeat([]byte("a"), 60)), clientFrame(0x80, bytes.Repeat([]byte("b"), 60))...)
	stream := append(append(over, clientFrame(0x89, []byte("p"))...), clientFrame(0x81, []byte("next"))...)
	for _, n := range []int{1, 5, len(stream)} {
		f := &frameParser{limit: 100}
		got, err := parseAll(f, stream, n)
		if err != nil {
			t.Fatal(err)
		}
		want := []parsed{{evTooLarge, ""}, {evPing, "p"}, {evText, "next"}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("reads of %d bytes: got %v, want %v", n, got, want)
		}
		if cap(f.msg) > 100 {
			t.Errorf("reads of %d bytes: the message buffer grew to %d bytes, past the limit", n, cap(f.msg))
		}
	}

	f := &frameParser{limit: 100, drop: true}
	got, err := parseAll(f, append(clientFrame(0x81, []byte("dropped")), clientFrame(0x88, nil)...), 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []parsed{{evClose, ""}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dropping: got %v, want %v", got, want)
	}
}

// Frames that break RFC 6455 are refused with the fault, as the library
// refused them, whichever byte of the header the read ends on.
func TestFramesBreakingTheProtocolAreRefused(t *testing.T) {
	unmasked := []byte{0x81, 0x02, 'h', 'i'}
	cases := []struct {
		name   string
		stream []byte
		want   string
	}{
		{"unmasked", unmasked, "bad MASK"},
		{"reserved bit", clientFrame(0xc1, []byte("x")), "RSV1 set"},
		{"two reserved bits", clientFrame(0xb1, []byte("x")), "RSV2 set, RSV3 set"},
		{"unknown opcode", clientFrame(0x83, nil), "bad opcode 3"},
		{"long control frame", clientFrame(0x89, bytes.Repeat([]byte("p"), 126)), "len > 125 for control"},
		{"fragmented control frame", clientFrame(0x09, nil), "FIN not set on control"},
		{"continuation first", clientFrame(0x80, []byte("x")), "continuation after FIN"},
		{"message inside a message", append(clientFrame(0x01, []byte("a")), clientFrame(0x81, []byte("b"))...), "data before FIN"},
		{"64-bit length with its top bit", []byte{0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, "invalid payload length"},
	}
	for _, tc := range cases {
		for _, n := range []int{1, len(tc.stream)} {
			f := &frameParser{limit: 1000}
			_, err := parseAll(f, tc.stream, n)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, reads of %d bytes: got %v, want %q", tc.name, n, err, tc.want)
			}
		}
	}
}

func TestCloseFramePayloads(t *testing.T) {
	cases := []struct {
		payload []byte
		code    int
		text    string
		fault   string
	}{
		{nil, 1005, "", ""},
		{[]byte{0x03}, 1005, "", ""},
		{[]byte{0x03, 0xe8}, 1000, "", ""},
		{[]byte{0x0f, 0xa1, 'o', 'k'}, 4001, "ok", ""},
		{[]byte{0x03, 0xed}, 0, "", "bad close code 1005"},
		{[]byte{0x03, 0xe7}, 0, "", "bad close code 999"},
		{[]byte{0x03, 0xe8, 0xff}, 0, "", "invalid utf8 payload in close frame"},
	}
	for _, tc := range cases {
		code, text, err := closeOf(tc.payload)
		switch {
		case tc.fault != "" && (err == nil || !strings.Contains(err.Error(), tc.fault)):
			t.Errorf("close payload %x: got %v, want %q", tc.payload, err, tc.fault)
		case tc.fault == "" && (err != nil || code != tc.code || text != tc.text):
			t.Errorf("close payload %x: got %d %q %v, want %d %q", tc.payload, code, text, err, tc.code, tc.text)
		}
	}
}

// Any bytes at all, valid frames or not, cut anywhere: the parser never
// keeps a message past its limit, and reads the same events and the same
// error however the reads cut the stream. The streams are random frames,
// some of them broken, and random bytes, from a fixed seed.
func TestFramesParsedAlikeHoweverCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []byte{0x81, 0x82, 0x01, 0x00, 0x80, 0x89, 0x8a, 0x88, 0x83, 0xc1}
	for i := range 2000 {
		var stream []byte
		if i%10 == 9 {
			stream = make([]byte, rng.IntN(300))
			for j := range stream {
				stream[j] = byte(rng.UintN(256))
			}
		} else {
			for range rng.IntN(6) + 1 {
				payload := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(300))
				stream = append(stream, clientFrame(ops[rng.IntN(len(ops))], payload)...)
			}
		}
		whole := &frameParser{limit: 200}
		want, wantErr := parseAll(whole, stream, len(stream)+1)
		cut := &frameParser{limit: 200}
		got, gotErr := parseAll(cut, stream, rng.IntN(20)+1)
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("stream %x: cut, %v %v; whole, %v %v", stream, got, gotErr, want, wantErr)
		}
		if cap(whole.msg) > 200 || cap(cut.msg) > 200 {
			t.Fatalf("stream %x: a message buffer of %d bytes, over the limit of 200", stream, max(cap(whole.msg), cap(cut.msg)))
		}
	}
}
