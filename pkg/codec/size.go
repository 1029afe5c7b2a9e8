package codec

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chatd/chatd"
)

// EnvelopeSize returns the length in bytes of e encoded by encoding/json
// (and EncodeEnvelope), the form the relay publishes, without encoding it.
// Acceptance checks it against the broker's largest message before commit:
// an envelope the broker refuses would stop the relay at that row for every
// chat. The unit tests hold it equal to len(json.Marshal(e)), field by field.
func EnvelopeSize(e *chatd.Envelope) int {
	return EnvelopeSizeWithRecipients(e, JSONListSize(e.Recipients))
}

// EnvelopeSizeWithRecipients is EnvelopeSize with the encoded size of the
// recipients given (JSONListSize of them) instead of read from e.Recipients,
// so that a batch sizing many envelopes for one large chat measures its
// member list once.
func EnvelopeSizeWithRecipients(e *chatd.Envelope, recipientsSize int) int {
	n := len(`{"outbox_id":,"msg":{},"device":,"to":}`)
	n += intSize(e.OutboxID) + messageSize(&e.Message) + JSONStringSize(e.Device)
	return n + recipientsSize
}

// WorstCaseEnvelopeSize bounds the largest envelope an event with a body of
// at most maxBodyBytes to members recipients can make: every id at its
// longest, the largest outbox id and seq, a body of characters that JSON
// escapes six times over (control characters, <, > and &), and the largest
// meta made of such characters (a send; an edit's kind and target are far
// smaller). It grows by 6 per body byte. The meta part is an upper bound,
// within a few dozen bytes of the real worst case.
func WorstCaseEnvelopeSize(maxBodyBytes, members int) int {
	id := strings.Repeat("x", max(chatd.MaxUserIDLen, chatd.MaxDeviceIDLen, chatd.MaxCIDLen, chatd.MaxChatIDLen))
	to := make([]string, members)
	for i := range to {
		to[i] = id[:chatd.MaxUserIDLen]
	}
	e := chatd.Envelope{
		OutboxID: math.MaxInt64,
		Message: chatd.Message{
			ID: id[:26], CID: id[:chatd.MaxCIDLen], Chat: id[:chatd.MaxChatIDLen], From: id[:chatd.MaxUserIDLen],
			Seq: math.MaxInt64, TS: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		},
		Device:     id[:chatd.MaxDeviceIDLen],
		Recipients: to,
	}
	return EnvelopeSize(&e) + 6*maxBodyBytes + len(`,"meta":`) + 6*chatd.MaxMetaBytes
}

// JSONStringSize returns the length of s encoded as a JSON string by
// encoding/json (with its HTML escaping), quotes included.
func JSONStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += int(asciiJSONSize[b])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// asciiJSONSize is the encoded length of each ASCII byte: 2 for the short
// escapes, 6 for \u00XX (other control characters, and <, > and & that
// encoding/json escapes for HTML), else 1. A table keeps the per-byte cost
// to one load: this runs per send inside the committing transaction.
var asciiJSONSize = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		switch {
		case b == '\\' || b == '"' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			t[b] = 2
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = 6
		default:
			t[b] = 1
		}
	}
	return t
}()

// JSONListSize returns the length of ss encoded as a JSON array of strings
// by encoding/json (null when ss is nil).
func JSONListSize(ss []string) int {
	if ss == nil {
		return len("null")
	}
	n := 2 + max(len(ss)-1, 0) // brackets and commas
	for _, s := range ss {
		n += JSONStringSize(s)
	}
	return n
}

func intSize(v int64) int {
	var buf [20]byte
	return len(strconv.AppendInt(buf[:0], v, 10))
}

// timeSize is the encoded length of a time.Time: RFC 3339 with nanoseconds,
// quoted, as time.Time.MarshalJSON writes it.
func timeSize(t time.Time) int {
	var buf [64]byte
	return len(t.AppendFormat(buf[:0], time.RFC3339Nano)) + 2
}
