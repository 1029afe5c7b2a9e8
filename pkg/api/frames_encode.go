package api

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/chatd/chatd"
)

// Server frames are built by appending into a caller's buffer instead of
// through encoding/json: the `msg` frame is written once per delivery, and
// reflection plus a fresh allocation per frame would dominate its cost. The
// output is the same JSON encoding/json produces for these shapes (minus its
// HTML escaping, which JSON does not need); the fuzz and round-trip tests
// check that it always parses back to the input.

// AppendMsgFrame appends the `msg` frame of m to dst and returns the result.
func AppendMsgFrame(dst []byte, m *chatd.Message) []byte {
	dst = append(dst, `{"type":"msg","id":`...)
	dst = appendString(dst, m.ID)
	dst = append(dst, `,"cid":`...)
	dst = appendString(dst, m.CID)
	dst = append(dst, `,"chat":`...)
	dst = appendString(dst, m.Chat)
	dst = append(dst, `,"from":`...)
	dst = appendString(dst, m.From)
	dst = append(dst, `,"body":`...)
	dst = appendString(dst, m.Body)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, m.Seq, 10)
	dst = append(dst, `,"ts":`...)
	dst = appendTime(dst, m.TS)
	return append(dst, '}')
}

// appendAccepted appends the `accepted` frame answering a send with m.
func appendAccepted(dst []byte, m *chatd.Message) []byte {
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

// appendRejected appends a `rejected` frame.
func appendRejected(dst []byte, cid, code, msg string) []byte {
	dst = append(dst, `{"type":"rejected","cid":`...)
	dst = appendString(dst, cid)
	dst = append(dst, `,"code":`...)
	dst = appendString(dst, code)
	dst = append(dst, `,"error":`...)
	dst = appendString(dst, msg)
	return append(dst, '}')
}

// appendReceipt appends a `receipt` frame.
func appendReceipt(dst []byte, chat, user, upto string) []byte {
	dst = append(dst, `{"type":"receipt","chat":`...)
	dst = appendString(dst, chat)
	dst = append(dst, `,"user":`...)
	dst = appendString(dst, user)
	dst = append(dst, `,"upto":`...)
	dst = appendString(dst, upto)
	return append(dst, '}')
}

var pongFrame = []byte(`{"type":"pong"}`)

// appendHello appends the `hello` frame with the limits in force.
func appendHello(dst []byte, id Identity, l *Limits) []byte {
	dst = append(dst, `{"type":"hello","user":`...)
	dst = appendString(dst, id.User)
	dst = append(dst, `,"device":`...)
	dst = appendString(dst, id.Device)
	dst = append(dst, `,"limits":{`...)
	fields := []struct {
		name string
		v    int64
	}{
		{"lease_ms", l.Lease.Milliseconds()},
		{"max_attempts", int64(l.MaxAttempts)},
		{"max_pending", int64(l.MaxPending)},
		{"max_body_bytes", int64(l.MaxBodyBytes)},
		{"max_frame_bytes", int64(l.MaxFrameBytes)},
		{"rate_per_s", int64(l.RatePerSecond)},
		{"rate_burst", int64(l.RateBurst)},
		{"credits", int64(l.Credits)},
		{"ping_interval_ms", l.PingInterval.Milliseconds()},
		{"idle_timeout_ms", l.IdleTimeout.Milliseconds()},
	}
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, f.name...)
		dst = append(dst, `":`...)
		dst = strconv.AppendInt(dst, f.v, 10)
	}
	return append(dst, "}}"...)
}

// appendTime appends t as a JSON string in RFC 3339 with nanoseconds, the
// form encoding/json gives time.Time.
func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Control characters, quote and
// backslash are escaped; so are U+2028 and U+2029 (valid JSON, but line
// terminators to JavaScript's eval); invalid UTF-8 becomes U+FFFD as in
// encoding/json.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
