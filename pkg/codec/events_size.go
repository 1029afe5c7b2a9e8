package codec

import (
	"unicode/utf8"

	"github.com/chatd/chatd"
)

// eventFieldsSize is the encoded length of the v2 fields of m (all
// omitempty), in the order encoding/json writes them, each with its leading
// comma. EnvelopeSize adds it, so an event's envelope is bounded like a
// message's.
func eventFieldsSize(m *chatd.Message) int {
	n := 0
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
