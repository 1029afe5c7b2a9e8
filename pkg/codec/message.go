package codec

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/jsonfast"
)

// AppendMessage appends the members of m's msg object, from "id" to its
// last set field, without the braces, as the WebSocket msg frame carries
// them: strings without encoding/json's HTML escaping (frames are not
// embedded in HTML) and meta as stored (chatd.CheckMeta compacted it).
// The v2 fields come only when set, so a plain message reads exactly as
// in v1.
func AppendMessage(dst []byte, m *chatd.Message) []byte {
	return appendMessage(dst, m, m.Meta, false)
}

// appendMessage writes m's members in the order encoding/json writes
// chatd.Message. html escapes strings as encoding/json does, for the
// envelope, whose bytes must equal json.Marshal's; meta is m.Meta already
// encoded for that mode. The envelope leaves a message's read state
// (edited_at, deleted, reactions) to encoding/json, so only frames write it
// here.
//
// A member added here is counted in messageSize and read in MessageField,
// below: the three together are the msg object's one definition.
func appendMessage(dst []byte, m *chatd.Message, meta []byte, html bool) []byte {
	dst = append(dst, `"id":`...)
	dst = jsonfast.AppendString(dst, m.ID, html)
	dst = append(dst, `,"cid":`...)
	dst = jsonfast.AppendString(dst, m.CID, html)
	dst = append(dst, `,"chat":`...)
	dst = jsonfast.AppendString(dst, m.Chat, html)
	dst = append(dst, `,"from":`...)
	dst = jsonfast.AppendString(dst, m.From, html)
	dst = append(dst, `,"body":`...)
	dst = jsonfast.AppendString(dst, m.Body, html)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, m.Seq, 10)
	dst = append(dst, `,"ts":`...)
	dst = jsonfast.AppendTime(dst, m.TS)
	dst = jsonfast.AppendStringMember(dst, `,"kind":`, string(m.Kind), html)
	dst = jsonfast.AppendStringMember(dst, `,"target":`, m.Target, html)
	if len(meta) > 0 {
		dst = append(dst, `,"meta":`...)
		dst = append(dst, meta...)
	}
	dst = jsonfast.AppendStringMember(dst, `,"emoji":`, m.Emoji, html)
	if m.On != nil {
		dst = append(dst, `,"on":`...)
		dst = strconv.AppendBool(dst, *m.On)
	}
	if m.EditedAt != nil {
		dst = append(dst, `,"edited_at":`...)
		dst = jsonfast.AppendTime(dst, *m.EditedAt)
	}
	if m.Deleted {
		dst = append(dst, `,"deleted":true`...)
	}
	if len(m.Reactions) > 0 {
		dst = appendReactions(dst, m.Reactions, html)
	}
	return dst
}

// appendReactions writes the reactions map with its keys sorted, so equal
// states encode equally.
func appendReactions(dst []byte, rx map[string][]string, html bool) []byte {
	keys := make([]string, 0, len(rx))
	for k := range rx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, `,"reactions":{`...)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonfast.AppendString(dst, k, html)
		dst = append(dst, ":["...)
		for j, u := range rx[k] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendString(dst, u, html)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// messageSize is the length of m's members as encoding/json writes them
// (appendMessage in html mode), without the braces: the fixed ones, then
// the omitempty ones in order. EnvelopeSize adds it, so an event's envelope
// is bounded like a message's.
func messageSize(m *chatd.Message) int {
	n := len(`"id":,"cid":,"chat":,"from":,"body":,"seq":,"ts":`)
	n += JSONStringSize(m.ID) + JSONStringSize(m.CID) + JSONStringSize(m.Chat) +
		JSONStringSize(m.From) + JSONStringSize(m.Body) + intSize(m.Seq) + timeSize(m.TS)
	if m.Kind != "" {
		n += len(`,"kind":`) + JSONStringSize(string(m.Kind))
	}
	if m.Target != "" {
		n += len(`,"target":`) + JSONStringSize(m.Target)
	}
	if len(m.Meta) > 0 {
		n += len(`,"meta":`) + rawJSONSize(m.Meta)
	}
	if m.Emoji != "" {
		n += len(`,"emoji":`) + JSONStringSize(m.Emoji)
	}
	if m.On != nil {
		n += len(`,"on":`) + len("false")
		if *m.On {
			n -= 1
		}
	}
	if m.EditedAt != nil {
		n += len(`,"edited_at":`) + timeSize(*m.EditedAt)
	}
	if m.Deleted {
		n += len(`,"deleted":true`)
	}
	if len(m.Reactions) > 0 {
		n += len(`,"reactions":`) + 2 + len(m.Reactions) - 1
		for emoji, users := range m.Reactions {
			n += JSONStringSize(emoji) + 1 + JSONListSize(users)
		}
	}
	return n
}

// rawJSONSize is the length of valid JSON raw as encoding/json writes a
// json.RawMessage: compacted (whitespace outside strings dropped), with <,
// > and & escaped to \u00XX and U+2028/U+2029 to \u202X.
func rawJSONSize(raw []byte) int {
	n, inString, escaped := 0, false, false
	for i := 0; i < len(raw); {
		b := raw[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(raw[i:])
			n += size
			if r == '\u2028' || r == '\u2029' {
				n += 3
			}
			i += size
			continue
		}
		i++
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case !inString && (b == ' ' || b == '\t' || b == '\n' || b == '\r'):
			continue
		}
		n++
		if b == '<' || b == '>' || b == '&' {
			n += 5
		}
	}
	return n
}

// MessageField reads the value of the msg object's member key into m, as
// encoding/json would, and reports false for a key it does not read
// (reactions, anything unknown) or a value of another shape: the caller
// then decodes the whole document with encoding/json, so the result never
// differs from it.
func MessageField(p *jsonfast.Parser, key []byte, m *chatd.Message) bool {
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
		m.Kind = chatd.EventKind(k)
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
	case "edited_at":
		var at time.Time
		ok = p.Time(&at)
		m.EditedAt = &at
	case "deleted":
		m.Deleted, ok = p.Bool()
	}
	return ok
}
