package chatd

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckText returns nil when s is text PostgreSQL can store in a text
// column, and an error wrapping ErrInvalid that names field otherwise: s
// must be valid UTF-8 (nothing is replaced silently) and hold no NUL
// (U+0000), which PostgreSQL's text cannot hold. Every user-supplied text
// that reaches the database goes through it at the edge (docs/protocol.md
// "Text: UTF-8, no NUL"), so no such text reaches a group-commit batch,
// where the database would refuse it (docs/architecture.md, invariant 6).
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8: send text encoded as UTF-8: %w", field, ErrInvalid)
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("%s holds a NUL character (U+0000) at byte %d, which cannot be stored: remove it: %w", field, i, ErrInvalid)
	}
	return nil
}

// checkJSONText is CheckText for the strings of a valid JSON text, whose
// escapes are kept as written: a \u0000 escape is a NUL, and a \u escape
// of a surrogate that is not half of a pair is not Unicode text (PostgreSQL's
// jsonb refuses both). raw must be valid JSON and valid UTF-8.
func checkJSONText(field string, raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // valid JSON: an escape always has its next byte
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1:])
		i += 4
		switch {
		case r == 0:
			return fmt.Errorf("%s holds a \\u0000 escape (NUL), which cannot be stored: remove it: %w", field, ErrInvalid)
		case utf16.IsSurrogate(r) && r < 0xdc00:
			// A high surrogate must be followed by a low one.
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo := hex4(raw[i+3:]); lo >= 0xdc00 && lo <= 0xdfff {
					i += 6
					continue
				}
			}
			return fmt.Errorf("%s holds a \\u escape of a lone surrogate, which is not Unicode text: %w", field, ErrInvalid)
		case utf16.IsSurrogate(r):
			return fmt.Errorf("%s holds a \\u escape of a lone surrogate, which is not Unicode text: %w", field, ErrInvalid)
		}
	}
	return nil
}

// hex4 decodes the 4 hex digits a valid JSON \u escape carries.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
