package codec

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/jsonfast"
)

// EncodeEnvelope returns e as JSON, byte for byte what json.Marshal(e)
// gives (so EnvelopeSize is its length, and a node decoding with
// encoding/json reads it the same), without reflection: the relay encodes
// every accepted event once. The rare shapes it does not write itself (the
// read-only state fields, a time json.Marshal refuses) go to json.Marshal.
func EncodeEnvelope(e *chatd.Envelope) ([]byte, error) {
	// Room for the fixed fields and a body without escapes; growing past it
	// is rare and cheaper than sizing exactly (EnvelopeSize walks every byte).
	m := &e.Message
	return AppendEnvelope(make([]byte, 0, 256+len(m.Body)+len(m.Meta)+24*len(e.Recipients)), e)
}

// AppendEnvelope appends e as EncodeEnvelope writes it: the shares of a
// commit go into one buffer. On an error dst is returned as it was.
func AppendEnvelope(dst []byte, e *chatd.Envelope) ([]byte, error) {
	m := &e.Message
	if !plainShape(m) {
		b, err := json.Marshal(e)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	meta, err := marshalMeta(m)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"outbox_id":`...)
	dst = strconv.AppendInt(dst, e.OutboxID, 10)
	dst = append(dst, `,"msg":{`...)
	dst = appendMessage(dst, m, meta, true)
	dst = append(dst, `},"device":`...)
	dst = jsonfast.AppendString(dst, e.Device, true)
	dst = append(dst, `,"to":`...)
	dst = jsonfast.AppendStrings(dst, e.Recipients, true)
	return append(dst, '}'), nil
}

// AppendMessageJSON appends m as json.Marshal(m) writes it, without
// reflection for the shapes an accepted event has: integrations encode
// every event they send. The rest (read state, a time json.Marshal
// refuses) goes to json.Marshal.
func AppendMessageJSON(dst []byte, m *chatd.Message) ([]byte, error) {
	if !plainShape(m) {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return append(dst, b...), nil
	}
	meta, err := marshalMeta(m)
	if err != nil {
		return nil, err
	}
	dst = append(dst, '{')
	dst = appendMessage(dst, m, meta, true)
	return append(dst, '}'), nil
}

// plainShape reports whether m is an event as accepted, which appendMessage
// writes in html mode byte for byte as encoding/json does: no read state
// (edited_at, deleted, reactions) and a time json.Marshal accepts.
func plainShape(m *chatd.Message) bool {
	return m.EditedAt == nil && !m.Deleted && len(m.Reactions) == 0 && m.TS.Year() >= 0 && m.TS.Year() <= 9999
}

// marshalMeta is m.Meta compacted and HTML-escaped as json.Marshal writes
// a RawMessage; meta is rare and small, so its own allocation is fine.
func marshalMeta(m *chatd.Message) ([]byte, error) {
	if len(m.Meta) == 0 {
		return nil, nil
	}
	return json.Marshal(m.Meta)
}

// DecodeEnvelope decodes an envelope as json.Unmarshal would, without
// reflection for the shape EncodeEnvelope writes: every node decodes every
// event it delivers. Anything else (unknown or case-folded keys, nulls,
// reaction sets, malformed JSON) is decoded by encoding/json, so the result
// never differs from it (FuzzEnvelopeJSON holds the two equal).
func DecodeEnvelope(data []byte) (chatd.Envelope, error) {
	var e chatd.Envelope
	// The fast path copies string bytes as they are; encoding/json replaces
	// invalid UTF-8 (EncodeEnvelope never writes it, but a decoder must not
	// trust that), so such data is left to it.
	if utf8.Valid(data) {
		p := jsonfast.NewParser(data)
		if p.Object(func(key []byte) bool { return envelopeField(p, key, &e) }) && p.End() {
			return e, nil
		}
	}
	e = chatd.Envelope{}
	err := json.Unmarshal(data, &e)
	return e, err
}

func envelopeField(p *jsonfast.Parser, key []byte, e *chatd.Envelope) bool {
	var ok bool
	switch string(key) {
	case "outbox_id":
		e.OutboxID, ok = p.Int64()
	case "msg":
		m := &e.Message
		ok = p.Object(func(key []byte) bool { return MessageField(p, key, m) })
	case "device":
		e.Device, ok = p.String()
	case "to":
		e.Recipients, ok = p.Strings()
	}
	return ok
}
