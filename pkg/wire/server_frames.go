package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
)

// Server frames are built by appending into a caller's buffer instead of
// through encoding/json: the `msg` frame is written once per delivery, and
// reflection plus a fresh allocation per frame would dominate its cost. The
// output is the same JSON encoding/json produces for these shapes (minus its
// HTML escaping, which JSON does not need); the fuzz and round-trip tests
// check that it always parses back to the input.

// Limits is `hello.limits`: the limits in force on a connection, as
// integers (durations in milliseconds).
type Limits struct {
	LeaseMS        int64 `json:"lease_ms"`
	MaxAttempts    int64 `json:"max_attempts"`
	MaxPending     int64 `json:"max_pending"`
	MaxBodyBytes   int64 `json:"max_body_bytes"`
	MaxFrameBytes  int64 `json:"max_frame_bytes"`
	RatePerS       int64 `json:"rate_per_s"`
	RateBurst      int64 `json:"rate_burst"`
	Credits        int64 `json:"credits"`
	PingIntervalMS int64 `json:"ping_interval_ms"`
	IdleTimeoutMS  int64 `json:"idle_timeout_ms"`
}

// ServerFrame is any server → client frame as the client decodes it; Type
// says which fields are set. The `msg` frame carries the msg object's fields
// at top level: they decode into the embedded Message (pkg/codec reads
// them), whose ID, CID, Seq, TS and Chat other frames share.
type ServerFrame struct {
	Type FrameType `json:"type"`

	// hello (User also on receipt, typing and presence)
	User   string `json:"user"`
	Device string `json:"device"`
	Limits Limits `json:"limits"`

	// msg; accepted (CID, ID, Seq, TS), rejected (CID), receipt (Chat,
	// Seq), typing (Chat). Its Device is not sent (json:"-").
	chatd.Message

	// rejected
	Code  Code   `json:"code"`
	Error string `json:"error"`
	// receipt
	Upto string `json:"upto"`

	// authed (v2): the refreshed token's exp, in Unix seconds.
	Exp int64 `json:"exp"`
	// presence (v2; User is the user who came or went)
	Online   bool      `json:"online"`
	LastSeen time.Time `json:"last_seen"`
}

// DecodeServerFrame decodes one server frame into f, which it resets first;
// the client calls it for every frame it reads, reusing one f (a frame per
// delivery should not cost a heap allocation of its own). Unknown fields are
// ignored and an unknown type is not an error (newer servers may add
// frames; the caller ignores what it does not know). The error, when data is
// not JSON or a known field has the wrong JSON type, wraps ErrProtocol; f
// is then reset again.
func DecodeServerFrame(data []byte, f *ServerFrame) error {
	return decodeServerFrame(data, f, true)
}

// decodeServerFrame is DecodeServerFrame; fast false skips the
// reflection-free decoder, for tests that prove the two agree.
func decodeServerFrame(data []byte, f *ServerFrame, fast bool) error {
	*f = ServerFrame{}
	// The fast path copies string bytes as they are; encoding/json replaces
	// invalid UTF-8, so such a frame is left to it.
	if fast && utf8.Valid(data) && decodeServerFast(data, f) {
		return nil
	}
	*f = ServerFrame{}
	if err := json.Unmarshal(data, f); err != nil {
		*f = ServerFrame{}
		return fmt.Errorf("decode server frame: %w: %v", ErrProtocol, err)
	}
	return nil
}

// frameRoom is what a frame needs beyond its strings' bytes: the keys,
// quotes, seq and time of a msg frame (about 90 bytes) and room for a few
// escapes or v2 fields. A frame that needs more grows as any append does.
const frameRoom = 128

// grow returns dst with room for n more bytes, in one allocation when it
// has not (slices.Grow makes two under the race detector).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}

// AppendMsg appends the `msg` frame of m to dst and returns the result.
func AppendMsg(dst []byte, m *chatd.Message) []byte {
	// Grown once for the whole frame: from nil (as the server encodes it),
	// appending field by field reallocated it five or six times.
	dst = grow(dst, frameRoom+len(m.ID)+len(m.CID)+len(m.Chat)+len(m.From)+len(m.Body)+
		len(m.Kind)+len(m.Target)+len(m.Meta)+len(m.Emoji))
	dst = append(dst, `{"type":"msg",`...)
	dst = codec.AppendMessage(dst, m)
	return append(dst, '}')
}

// AppendAccepted appends the `accepted` frame answering a send with m.
func AppendAccepted(dst []byte, m *chatd.Message) []byte {
	dst = grow(dst, frameRoom+len(m.CID)+len(m.ID))
	dst = append(dst, `{"type":"accepted","cid":`...)
	dst = appendString(dst, m.CID)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, m.ID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, m.Seq, 10)
	dst = append(dst, `,"ts":`...)
	dst = appendTime(dst, m.TS)
	return append(dst, '}')
}

// AppendRejected appends a `rejected` frame; cid is "" when the refused
// frame had none.
func AppendRejected(dst []byte, cid string, code Code, msg string) []byte {
	dst = append(dst, `{"type":"rejected","cid":`...)
	dst = appendString(dst, cid)
	dst = append(dst, `,"code":`...)
	dst = appendString(dst, string(code))
	dst = append(dst, `,"error":`...)
	dst = appendString(dst, msg)
	return append(dst, '}')
}

// AppendReceipt appends a `receipt` frame: user read chat up to upto, the
// message at seq (the user's read position, which never goes back).
func AppendReceipt(dst []byte, chat, user, upto string, seq int64) []byte {
	dst = append(dst, `{"type":"receipt","chat":`...)
	dst = appendString(dst, chat)
	dst = append(dst, `,"user":`...)
	dst = appendString(dst, user)
	dst = append(dst, `,"upto":`...)
	dst = appendString(dst, upto)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	return append(dst, '}')
}

// AppendPong appends the `pong` frame.
func AppendPong(dst []byte) []byte {
	return append(dst, `{"type":"pong"}`...)
}

// AppendHello appends the `hello` frame with the limits in force, keys in
// the contract's order.
func AppendHello(dst []byte, user, device string, l *Limits) []byte {
	dst = append(dst, `{"type":"hello","user":`...)
	dst = appendString(dst, user)
	dst = append(dst, `,"device":`...)
	dst = appendString(dst, device)
	dst = append(dst, `,"limits":{"lease_ms":`...)
	dst = strconv.AppendInt(dst, l.LeaseMS, 10)
	dst = append(dst, `,"max_attempts":`...)
	dst = strconv.AppendInt(dst, l.MaxAttempts, 10)
	dst = append(dst, `,"max_pending":`...)
	dst = strconv.AppendInt(dst, l.MaxPending, 10)
	dst = append(dst, `,"max_body_bytes":`...)
	dst = strconv.AppendInt(dst, l.MaxBodyBytes, 10)
	dst = append(dst, `,"max_frame_bytes":`...)
	dst = strconv.AppendInt(dst, l.MaxFrameBytes, 10)
	dst = append(dst, `,"rate_per_s":`...)
	dst = strconv.AppendInt(dst, l.RatePerS, 10)
	dst = append(dst, `,"rate_burst":`...)
	dst = strconv.AppendInt(dst, l.RateBurst, 10)
	dst = append(dst, `,"credits":`...)
	dst = strconv.AppendInt(dst, l.Credits, 10)
	dst = append(dst, `,"ping_interval_ms":`...)
	dst = strconv.AppendInt(dst, l.PingIntervalMS, 10)
	dst = append(dst, `,"idle_timeout_ms":`...)
	dst = strconv.AppendInt(dst, l.IdleTimeoutMS, 10)
	return append(dst, "}}"...)
}
