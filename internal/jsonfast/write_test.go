package jsonfast

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendStringMatchesEncodingJSON holds AppendString to encoding/json's
// output for every byte on its own and for mixed strings, with and without
// HTML escaping.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{"", "plain ascii", `quote " and \ backslash`, "<a href='x'>&amp;</a>",
		"tab\tnew\nline\r", "héllo wörld", "\u2028 and \u2029", "bad \xff utf8 \xc3", "emoji 🎉 end"}
	for b := 0; b < 256; b++ {
		inputs = append(inputs, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"z")
	}
	for _, s := range inputs {
		for _, html := range []bool{false, true} {
			var want strings.Builder
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			got := string(AppendString(nil, s, html))
			if w := strings.TrimSuffix(want.String(), "\n"); got != w {
				t.Errorf("AppendString(%q, html=%v) = %s, want %s", s, html, got, w)
			}
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	cases := []struct{ name, s string }{
		{"ascii16", "hello from alice"},
		{"ascii256", strings.Repeat("the quick brown fox ", 13)[:256]},
		{"mixed256", strings.Repeat("héllo \"w\" ", 26)[:256]},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				buf = AppendString(buf[:0], c.s, true)
			}
		})
	}
}
