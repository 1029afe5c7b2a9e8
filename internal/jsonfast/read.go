package jsonfast

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Parser walks one JSON text the caller knows the shape of. Every method
// reports false rather than guessing (a null, a number where a string
// belongs, a surrogate escape, malformed JSON), and the caller then leaves
// the whole text to encoding/json. The text must be valid UTF-8 (callers
// check it, or produced it): string bytes are copied as they are.
type Parser struct {
	data []byte
	i    int
}

// NewParser returns a Parser at the start of data.
func NewParser(data []byte) *Parser { return &Parser{data: data} }

// Space skips whitespace.
func (p *Parser) Space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// Consume skips whitespace, then takes b if it comes next.
func (p *Parser) Consume(b byte) bool {
	p.Space()
	if p.i < len(p.data) && p.data[p.i] == b {
		p.i++
		return true
	}
	return false
}

// End reports whether only whitespace is left.
func (p *Parser) End() bool {
	p.Space()
	return p.i == len(p.data)
}

// Object calls field for each key of the object that comes next, with the
// parser at the key's value; field reports false to give up. Keys are
// ASCII without escapes (a key outside that, which encoding/json might fold
// onto a field name, gives up).
func (p *Parser) Object(field func(key []byte) bool) bool {
	if !p.Consume('{') {
		return false
	}
	if p.Consume('}') {
		return true
	}
	for {
		p.Space()
		key, ok := p.key()
		if !ok || !p.Consume(':') {
			return false
		}
		p.Space()
		if !field(key) {
			return false
		}
		if p.Consume(',') {
			continue
		}
		return p.Consume('}')
	}
}

// key returns the bytes of a string with no escapes and only ASCII, not
// copied.
func (p *Parser) key() ([]byte, bool) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return nil, false
	}
	p.i++
	start := p.i
	for p.i < len(p.data) {
		switch b := p.data[p.i]; {
		case b == '"':
			p.i++
			return p.data[start : p.i-1], true
		case b == '\\' || b < 0x20 || b >= utf8.RuneSelf:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// FoldsTo reports whether key equals one of names when case is ignored but
// is not exactly it: encoding/json would match it to that field, so a
// caller meeting an unknown key gives up on this.
func FoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// String decodes a string value. \u escapes outside the surrogate range are
// decoded as encoding/json does; a surrogate escape gives up (encoding/json
// pairs or replaces them).
func (p *Parser) String() (string, bool) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", false
	}
	p.i++
	start := p.i
	for p.i < len(p.data) {
		b := p.data[p.i]
		switch {
		case b == '"':
			s := string(p.data[start:p.i])
			p.i++
			return s, true
		case b == '\\':
			return p.escapedString(start)
		case b < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// StringIn decodes a string value as String does, but when the value is
// one of names, written without escapes, it returns that name's index and
// makes no copy (a value from a small known set: a frame's type). Any other
// value is decoded by String, with index -1.
func (p *Parser) StringIn(names []string) (index int, s string, ok bool) {
	start := p.i
	if tok, ok := p.key(); ok {
		for k, n := range names {
			if string(tok) == n {
				return k, n, true
			}
		}
	}
	p.i = start
	s, ok = p.String()
	return -1, s, ok
}

// escapedString finishes a string holding an escape, from its start.
func (p *Parser) escapedString(start int) (string, bool) {
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
		c := p.data[p.i+1]
		p.i += 2
		switch c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if p.i+4 > len(p.data) {
				return "", false
			}
			r, err := strconv.ParseUint(string(p.data[p.i:p.i+4]), 16, 32)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return "", false
			}
			out = utf8.AppendRune(out, rune(r))
			p.i += 4
		default:
			return "", false
		}
	}
	return "", false
}

// Quoted returns a string token as written, quotes included, not copied:
// for values with their own decoder (time.Time.UnmarshalJSON).
func (p *Parser) Quoted() ([]byte, bool) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return nil, false
	}
	for j := p.i + 1; j < len(p.data); j++ {
		switch p.data[j] {
		case '\\':
			j++
		case '"':
			tok := p.data[p.i : j+1]
			p.i = j + 1
			return tok, true
		}
	}
	return nil, false
}

// Time decodes a string token into t as time.Time's own JSON decoding
// does (RFC 3339).
func (p *Parser) Time(t *time.Time) bool {
	tok, ok := p.Quoted()
	return ok && t.UnmarshalJSON(tok) == nil
}

// Strings decodes an array of strings.
func (p *Parser) Strings() ([]string, bool) {
	out := make([]string, 0, 4)
	ok := p.Array(func() bool {
		s, ok := p.String()
		out = append(out, s)
		return ok
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// Array calls elem for each element of the array that comes next, with the
// parser at the element; elem reports false to give up.
func (p *Parser) Array(elem func() bool) bool {
	if !p.Consume('[') {
		return false
	}
	if p.Consume(']') {
		return true
	}
	for {
		p.Space()
		if !elem() {
			return false
		}
		if p.Consume(',') {
			continue
		}
		return p.Consume(']')
	}
}

// Bool decodes true or false.
func (p *Parser) Bool() (v, ok bool) {
	rest := p.data[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// Int64 decodes an integer written as digits with an optional minus sign
// (what encoding/json writes for an int64); fractions and exponents give up.
func (p *Parser) Int64() (int64, bool) {
	start := p.i
	if p.i < len(p.data) && p.data[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.data[digits] == '0' && p.i-digits > 1) {
		return 0, false
	}
	if p.i < len(p.data) {
		switch p.data[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(p.data[start:p.i]), 10, 64)
	return v, err == nil
}

// Composite returns the object or array that comes next as written,
// checked by json.Valid (a scan, no reflection) and copied, since the
// caller's buffer may be reused. Other values give up.
func (p *Parser) Composite() (json.RawMessage, bool) {
	if p.i >= len(p.data) || (p.data[p.i] != '{' && p.data[p.i] != '[') {
		return nil, false
	}
	start, depth, inString := p.i, 0, false
	for ; p.i < len(p.data); p.i++ {
		b := p.data[p.i]
		if inString {
			switch b {
			case '\\':
				p.i++
			case '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				p.i++
				raw := p.data[start:p.i]
				if !json.Valid(raw) {
					return nil, false
				}
				return append(json.RawMessage(nil), raw...), true
			}
		}
	}
	return nil, false
}
