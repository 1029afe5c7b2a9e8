// Package jsonfast reads and writes the few JSON shapes on chatd's hot
// paths (client frames, server frames, stream envelopes) without
// reflection. It is deliberately narrow: the reader reports false for any
// input outside the shapes it knows, and its callers then decode with
// encoding/json, so results never differ from encoding/json's, only their
// cost (each caller's fuzz test holds the two equal).
package jsonfast

import (
	"time"
	"unicode/utf8"
)

// AppendTime appends t as a JSON string in RFC 3339 with nanoseconds, the
// form encoding/json gives time.Time.
func AppendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// copyAsIs[html][b] is true for the ASCII bytes AppendString copies
// unescaped: everything from space up but quote and backslash, and with
// html also but <, > and &. A table lookup per byte instead of four to
// seven comparisons: message bodies are mostly such bytes. It is built once
// and never written.
var copyAsIs = [2][utf8.RuneSelf]bool{asIsTable(false), asIsTable(true)}

func asIsTable(html bool) (t [utf8.RuneSelf]bool) {
	for b := byte(0x20); b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && (!html || (b != '<' && b != '>' && b != '&'))
	}
	return t
}

// AppendStrings appends ss as a JSON array of strings, null when nil, as
// encoding/json writes a []string.
func AppendStrings(dst []byte, ss []string, escapeHTML bool) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s, escapeHTML)
	}
	return append(dst, ']')
}

// AppendStringMember appends member (`,"name":`) and s as a JSON string,
// or nothing when s is empty: a string field with omitempty.
func AppendStringMember(dst []byte, member, s string, escapeHTML bool) []byte {
	if s == "" {
		return dst
	}
	return AppendString(append(dst, member...), s, escapeHTML)
}

// AppendString appends s as a JSON string, as encoding/json writes it:
// control characters, quote and backslash escaped; U+2028 and U+2029 too
// (valid JSON, but line terminators to JavaScript's eval); invalid UTF-8
// as U+FFFD; and with escapeHTML, <, > and & as \u003c, \u003e, \u0026
// (json.Marshal's default).
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	asIs := &copyAsIs[0]
	if escapeHTML {
		asIs = &copyAsIs[1]
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if asIs[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
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
