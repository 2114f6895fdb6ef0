package tokens

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCount checks, for any input and both encodings: no panic, Count equals
// len(Encode), and Encode decodes back to the input (for invalid UTF-8: to
// the input with each invalid byte replaced by U+FFFD).
func FuzzCount(f *testing.F) {
	for _, s := range []string{"", "hello world", "don't STOP'LL", "  \n\n  x", "\u0301ABC.", "!\u0301!", "ǅungla",
		"日本語 テキスト", "👨‍👩‍👧‍👦", "a\U0002EBF0b", "1234567", "x: //\n/y", "\xff\xfe", "\xf0\x9f\x98", strings.Repeat(" ", 70) + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := s
		if !utf8.ValidString(s) {
			want = string([]rune(s))
		}
		for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
			ids := enc.Encode(s)
			if n := enc.Count(s); n != len(ids) {
				t.Fatalf("%s: Count(%q) = %d, len(Encode) = %d", enc.Name(), s, n, len(ids))
			}
			if got := enc.decode(ids); got != want {
				t.Fatalf("%s: decode(Encode(%q)) = %q, want %q", enc.Name(), s, got, want)
			}
			if len(s) > 0 && len(ids) == 0 {
				t.Fatalf("%s: no tokens for %q", enc.Name(), s)
			}
		}
	})
}
