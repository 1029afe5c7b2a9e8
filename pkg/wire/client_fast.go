package wire

import (
	"encoding/json"
	"strings"
)

// clientKeys are the JSON names of clientJSON's fields. A key that equals
// one of them only when case is ignored is matched by encoding/json too
// (it folds case), so the fast path leaves such frames to it.
var clientKeys = [...]string{"type", "chat", "cid", "body", "upto", "ids", "token", "target", "meta", "emoji", "on"}

// decodeClientFast fills w from data without reflection, for the shape
// every well-behaved client sends: one JSON object whose keys are exactly
// the field names (or unrelated names with a string value), with string
// values, a string array for ids, a boolean for on and any JSON value for
// meta. It reports false for anything else (escaped keys, \u escapes,
// nulls, numbers, nested values outside meta, a key differing from a field
// name only in case, trailing bytes, malformed JSON), and the caller then
// decodes with encoding/json, so the outcome is always what encoding/json
// gives; FuzzDecodeFrame checks that the two agree. It runs on every frame
// a server reads: a send or an ack is decoded several times faster, with
// fewer allocations, than through reflection.
func decodeClientFast(data []byte, w *clientJSON) bool {
	p := fastParser{data: data}
	p.space()
	if !p.consume('{') {
		return false
	}
	p.space()
	if p.consume('}') {
		return p.end()
	}
	for {
		p.space()
		key, ok := p.rawString()
		if !ok {
			return false
		}
		p.space()
		if !p.consume(':') {
			return false
		}
		p.space()
		if !p.field(key, w) {
			return false
		}
		p.space()
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			return p.end()
		}
		return false
	}
}

// fastParser walks one frame; every method reports false rather than
// guessing, leaving the frame to encoding/json.
type fastParser struct {
	data []byte
	i    int
}

func (p *fastParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) consume(b byte) bool {
	if p.i < len(p.data) && p.data[p.i] == b {
		p.i++
		return true
	}
	return false
}

// end reports whether only whitespace follows.
func (p *fastParser) end() bool {
	p.space()
	return p.i == len(p.data)
}

// field decodes the value of key into w.
func (p *fastParser) field(key []byte, w *clientJSON) bool {
	var dst **string
	switch string(key) {
	case "type":
		dst = &w.Type
	case "chat":
		dst = &w.Chat
	case "cid":
		dst = &w.CID
	case "body":
		dst = &w.Body
	case "upto":
		dst = &w.Upto
	case "token":
		dst = &w.Token
	case "target":
		dst = &w.Target
	case "emoji":
		dst = &w.Emoji
	case "ids":
		return p.stringArray(&w.IDs)
	case "on":
		return p.boolean(&w.On)
	case "meta":
		return p.rawValue(&w.Meta)
	default:
		for _, k := range clientKeys {
			if strings.EqualFold(string(key), k) {
				return false
			}
		}
		// An unrelated field (a client's own, e.g. a trace id): skipped
		// when it is a string, the usual case; anything else falls back.
		_, ok := p.str()
		return ok
	}
	s, ok := p.str()
	if !ok {
		return false
	}
	*dst = &s
	return true
}

// rawString returns the bytes of a JSON string with no escapes (a key),
// not copied.
func (p *fastParser) rawString() ([]byte, bool) {
	if !p.consume('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.data) {
		switch b := p.data[p.i]; {
		case b == '"':
			p.i++
			return p.data[start : p.i-1], true
		case b == '\\' || b < 0x20 || b >= 0x80:
			return nil, false // escaped, a control byte, or non-ASCII (Unicode case folding)
		}
		p.i++
	}
	return nil, false
}

// str decodes a JSON string value. The frame is valid UTF-8 already
// (DecodeClientFrame checks it first), so bytes are copied as they are;
// the two-character escapes are decoded and \u escapes fall back
// (surrogate handling is encoding/json's).
func (p *fastParser) str() (string, bool) {
	if !p.consume('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.data) {
		b := p.data[p.i]
		if b == '"' {
			s := string(p.data[start:p.i])
			p.i++
			return s, true
		}
		if b == '\\' {
			return p.escapedStr(start)
		}
		if b < 0x20 {
			return "", false
		}
		p.i++
	}
	return "", false
}

// escapedStr finishes a string that holds an escape, from its start.
func (p *fastParser) escapedStr(start int) (string, bool) {
	out := make([]byte, 0, p.i-start+16)
	out = append(out, p.data[start:p.i]...)
	for p.i < len(p.data) {
		b := p.data[p.i]
		switch {
		case b == '"':
			p.i++
			return string(out), true
		case b < 0x20:
			return "", false
		case b != '\\':
			out = append(out, b)
			p.i++
			continue
		}
		if p.i+1 >= len(p.data) {
			return "", false
		}
		var c byte
		switch p.data[p.i+1] {
		case '"':
			c = '"'
		case '\\':
			c = '\\'
		case '/':
			c = '/'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return "", false // \u and anything invalid
		}
		out = append(out, c)
		p.i += 2
	}
	return "", false
}

func (p *fastParser) stringArray(dst *[]string) bool {
	if !p.consume('[') {
		return false
	}
	out := make([]string, 0, 4)
	p.space()
	if p.consume(']') {
		*dst = out
		return true
	}
	for {
		p.space()
		s, ok := p.str()
		if !ok {
			return false
		}
		out = append(out, s)
		p.space()
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			*dst = out
			return true
		}
		return false
	}
}

func (p *fastParser) boolean(dst **bool) bool {
	rest := p.data[p.i:]
	var v bool
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		v, p.i = true, p.i+4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
	default:
		return false
	}
	*dst = &v
	return true
}

// rawValue takes one JSON object or array as it is written (meta), checked
// by json.Valid (a scan, no reflection) and copied, since the caller may
// reuse data. Other values fall back.
func (p *fastParser) rawValue(dst *json.RawMessage) bool {
	if p.i >= len(p.data) || (p.data[p.i] != '{' && p.data[p.i] != '[') {
		return false
	}
	start, depth, inStr := p.i, 0, false
	for ; p.i < len(p.data); p.i++ {
		b := p.data[p.i]
		if inStr {
			switch b {
			case '\\':
				p.i++
			case '"':
				inStr = false
			}
			continue
		}
		switch b {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				p.i++
				raw := p.data[start:p.i]
				if !json.Valid(raw) {
					return false
				}
				*dst = append(json.RawMessage(nil), raw...)
				return true
			}
		}
	}
	return false
}
