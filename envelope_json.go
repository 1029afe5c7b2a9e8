package chatd

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/chatd/chatd/internal/jsonfast"
)

// EncodeEnvelope returns e as JSON, byte for byte what json.Marshal(e)
// gives (so EncodedSize is its length, and a node decoding with
// encoding/json reads it the same), without reflection: the relay encodes
// every accepted event once. The rare shapes it does not write itself (the
// read-only state fields, a time json.Marshal refuses) go to json.Marshal.
func EncodeEnvelope(e *Envelope) ([]byte, error) {
	m := &e.Message
	if m.EditedAt != nil || m.Deleted || len(m.Reactions) > 0 || m.TS.Year() < 0 || m.TS.Year() > 9999 {
		return json.Marshal(e)
	}
	// Room for the fixed fields and a body without escapes; growing past it
	// is rare and cheaper than sizing exactly (EncodedSize walks every byte).
	dst := make([]byte, 0, 256+len(m.Body)+len(m.Meta)+24*len(e.Recipients))
	dst = append(dst, `{"outbox_id":`...)
	dst = strconv.AppendInt(dst, e.OutboxID, 10)
	dst = append(dst, `,"msg":{"id":`...)
	dst = jsonfast.AppendString(dst, m.ID, true)
	dst = append(dst, `,"cid":`...)
	dst = jsonfast.AppendString(dst, m.CID, true)
	dst = append(dst, `,"chat":`...)
	dst = jsonfast.AppendString(dst, m.Chat, true)
	dst = append(dst, `,"from":`...)
	dst = jsonfast.AppendString(dst, m.From, true)
	dst = append(dst, `,"body":`...)
	dst = jsonfast.AppendString(dst, m.Body, true)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, m.Seq, 10)
	dst = append(dst, `,"ts":`...)
	dst = jsonfast.AppendTime(dst, m.TS)
	if m.Kind != "" {
		dst = append(dst, `,"kind":`...)
		dst = jsonfast.AppendString(dst, string(m.Kind), true)
	}
	if m.Target != "" {
		dst = append(dst, `,"target":`...)
		dst = jsonfast.AppendString(dst, m.Target, true)
	}
	if len(m.Meta) > 0 {
		// Compacted and HTML-escaped as json.Marshal writes a RawMessage;
		// meta is rare and small, so its own allocation is fine.
		meta, err := json.Marshal(m.Meta)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"meta":`...)
		dst = append(dst, meta...)
	}
	if m.Emoji != "" {
		dst = append(dst, `,"emoji":`...)
		dst = jsonfast.AppendString(dst, m.Emoji, true)
	}
	if m.On != nil {
		dst = append(dst, `,"on":`...)
		dst = strconv.AppendBool(dst, *m.On)
	}
	dst = append(dst, `},"device":`...)
	dst = jsonfast.AppendString(dst, e.Device, true)
	dst = append(dst, `,"to":`...)
	if e.Recipients == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, r := range e.Recipients {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendString(dst, r, true)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// DecodeEnvelope decodes an envelope as json.Unmarshal would, without
// reflection for the shape EncodeEnvelope writes: every node decodes every
// event it delivers. Anything else (unknown or case-folded keys, nulls,
// reaction sets, malformed JSON) is decoded by encoding/json, so the result
// never differs from it (FuzzEnvelopeJSON holds the two equal).
func DecodeEnvelope(data []byte) (Envelope, error) {
	var e Envelope
	// The fast path copies string bytes as they are; encoding/json replaces
	// invalid UTF-8 (EncodeEnvelope never writes it, but a decoder must not
	// trust that), so such data is left to it.
	if utf8.Valid(data) {
		p := jsonfast.NewParser(data)
		if p.Object(func(key []byte) bool { return envelopeField(p, key, &e) }) && p.End() {
			return e, nil
		}
	}
	e = Envelope{}
	err := json.Unmarshal(data, &e)
	return e, err
}

func envelopeField(p *jsonfast.Parser, key []byte, e *Envelope) bool {
	var ok bool
	switch string(key) {
	case "outbox_id":
		e.OutboxID, ok = p.Int64()
	case "msg":
		m := &e.Message
		ok = p.Object(func(key []byte) bool { return messageField(p, key, m) })
	case "device":
		e.Device, ok = p.String()
	case "to":
		e.Recipients, ok = p.Strings()
	}
	return ok
}

func messageField(p *jsonfast.Parser, key []byte, m *Message) bool {
	var ok bool
	switch string(key) {
	case "id":
		m.ID, ok = p.String()
	case "cid":
		m.CID, ok = p.String()
	case "chat":
		m.Chat, ok = p.String()
	case "from":
		m.From, ok = p.String()
	case "body":
		m.Body, ok = p.String()
	case "seq":
		m.Seq, ok = p.Int64()
	case "ts":
		ok = p.Time(&m.TS)
	case "kind":
		var k string
		k, ok = p.String()
		m.Kind = EventKind(k)
	case "target":
		m.Target, ok = p.String()
	case "emoji":
		m.Emoji, ok = p.String()
	case "meta":
		m.Meta, ok = p.Composite()
	case "on":
		var on bool
		on, ok = p.Bool()
		m.On = &on
	}
	return ok
}
