package chatd_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chatd/chatd"
)

func TestCheckText(t *testing.T) {
	tests := []struct {
		name, s string
		want    error
	}{
		{"plain", "hello", nil},
		{"empty", "", nil},
		{"emoji and accents", "👍 café", nil},
		{"U+FFFD as sent", "a\uFFFDb", nil},
		{"NUL", "a\x00b", chatd.ErrInvalid},
		{"NUL alone", "\x00", chatd.ErrInvalid},
		{"not UTF-8", "a\xffb", chatd.ErrInvalid},
		{"encoded surrogate", "\xed\xa0\x80", chatd.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := chatd.CheckText("body", tt.s)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CheckText(%q) = %v, want %v", tt.s, err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "body ") {
				t.Fatalf("CheckText(%q) = %q, want an error naming the field first", tt.s, err)
			}
		})
	}
}

// Meta is stored as the client wrote it, escapes included, so its escapes
// are held to the rule CheckText applies to raw text.
func TestCheckMetaRefusesUnstorableEscapes(t *testing.T) {
	tests := []struct {
		name, meta string
		want       error
	}{
		{"plain", `{"a":"b"}`, nil},
		{"escapes", `{"a":"\n\"\\u0000\u00e9"}`, nil},
		{"surrogate pair", `{"a":"\ud83d\udc4d"}`, nil},
		{"NUL escape", `{"a":"x\u0000"}`, chatd.ErrInvalid},
		{"NUL escape in a key", `{"\u0000":1}`, chatd.ErrInvalid},
		{"lone high surrogate", `{"a":"\ud800"}`, chatd.ErrInvalid},
		{"high surrogate then text", `{"a":"\ud800xxxxxx"}`, chatd.ErrInvalid},
		{"lone low surrogate", `{"a":"\udc00"}`, chatd.ErrInvalid},
		{"two high surrogates", `{"a":"\ud800\ud800"}`, chatd.ErrInvalid},
		{"not UTF-8", "{\"a\":\"\xff\"}", chatd.ErrInvalid},
		{"not an object", `[1]`, chatd.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chatd.CheckMeta([]byte(tt.meta))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CheckMeta(%s) = %v, want %v", tt.meta, err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "meta ") {
				t.Fatalf("CheckMeta(%s) = %q, want an error naming meta", tt.meta, err)
			}
		})
	}
}
