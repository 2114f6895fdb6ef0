package tokens

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

var encodings = []func() *Encoding{O200kBase, Cl100kBase}

func TestGet(t *testing.T) {
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		enc, err := Get(name)
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		if enc.Name() != name {
			t.Errorf("Get(%q).Name() = %q", name, enc.Name())
		}
	}
	if a, b := O200kBase(), O200kBase(); a != b {
		t.Error("O200kBase returned two different encodings")
	}
	if enc, _ := Get("cl100k_base"); enc != Cl100kBase() {
		t.Error("Get and Cl100kBase returned different encodings")
	}
	for _, name := range []string{"", "p50k_base", "O200K_BASE", "o200k_base ", "gpt2"} {
		enc, err := Get(name)
		if !errors.Is(err, ErrUnknownEncoding) || enc != nil {
			t.Errorf("Get(%q) = %v, %v; want nil, ErrUnknownEncoding", name, enc, err)
		}
		if err != nil && !strings.Contains(err.Error(), "o200k_base") {
			t.Errorf("Get(%q) error %q does not name the known encodings", name, err)
		}
	}
}

// TestLoadOnce builds each encoding from many goroutines at once: all must
// get the same *Encoding (run with -race).
func TestLoadOnce(t *testing.T) {
	for _, get := range encodings {
		var wg sync.WaitGroup
		got := make([]*Encoding, 16)
		for i := range got {
			wg.Go(func() { got[i] = get() })
		}
		wg.Wait()
		for _, e := range got {
			if e == nil || e != got[0] {
				t.Fatalf("concurrent loads returned %p and %p", e, got[0])
			}
		}
	}
}

func TestKnownIDs(t *testing.T) {
	// Ids from tiktoken.
	cases := []struct {
		enc  func() *Encoding
		text string
		ids  []int
	}{
		{O200kBase, "hello world", []int{24912, 2375}},
		{Cl100kBase, "hello world", []int{15339, 1917}},
		{O200kBase, "Hello, world! I'm here.", []int{13225, 11, 2375, 0, 5477, 2105, 13}},
		{Cl100kBase, "Hello, world! I'm here.", []int{9906, 11, 1917, 0, 358, 2846, 1618, 13}},
		// Special-token text is ordinary text.
		{O200kBase, "<|endoftext|>", []int{27, 91, 419, 1440, 919, 91, 29}},
		{Cl100kBase, "<|endoftext|>", []int{27, 91, 8862, 728, 428, 91, 29}},
		{O200kBase, "   x", []int{256, 1215}},
		{Cl100kBase, "   x", []int{256, 865}},
	}
	for _, c := range cases {
		enc := c.enc()
		if got := enc.Encode(c.text); !slices.Equal(got, c.ids) {
			t.Errorf("%s Encode(%q) = %v, want %v", enc.Name(), c.text, got, c.ids)
		}
		if got := enc.Count(c.text); got != len(c.ids) {
			t.Errorf("%s Count(%q) = %d, want %d", enc.Name(), c.text, got, len(c.ids))
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, get := range encodings {
		enc := get()
		if n := enc.Count(""); n != 0 {
			t.Errorf("%s Count(\"\") = %d", enc.Name(), n)
		}
		if ids := enc.Encode(""); len(ids) != 0 {
			t.Errorf("%s Encode(\"\") = %v", enc.Name(), ids)
		}
	}
}

// TestInvalidUTF8 checks the documented rule: each byte that is not part of a
// valid UTF-8 sequence counts as U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	inputs := []string{
		"\xff", "a\x80b", "\xf0\x9f\x98", "\xf0\x9f\x98 hello", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
		"héllo\xe9wörld", "日本\xe8\xaa語", "don\x92t", strings.Repeat("\xfe", 100), "ok \xe2\x82\x28 ok",
	}
	for _, get := range encodings {
		enc := get()
		for _, s := range inputs {
			replaced := string([]rune(s))
			if !utf8.ValidString(replaced) || replaced == s {
				t.Fatalf("bad test input %q", s)
			}
			if got, want := enc.Encode(s), enc.Encode(replaced); !slices.Equal(got, want) {
				t.Errorf("%s Encode(%q) = %v, want Encode(%q) = %v", enc.Name(), s, got, replaced, want)
			}
			if got, want := enc.Count(s), enc.Count(replaced); got != want {
				t.Errorf("%s Count(%q) = %d, want %d", enc.Name(), s, got, want)
			}
		}
	}
}

// TestRoundTrip encodes texts and decodes them back, for valid UTF-8.
func TestRoundTrip(t *testing.T) {
	texts := []string{"", "a", "hello world", " \n\t\r\n", "ǅungla's HTMLParser iPhone", "日本語のテキスト", "👨‍👩‍👧‍👦🇺🇸",
		strings.Repeat("ab ", 1000), strings.Repeat(" ", 5000) + "x", strings.Repeat("\u0301", 300)}
	for _, get := range encodings {
		enc := get()
		for _, s := range texts {
			ids := enc.Encode(s)
			if got := enc.decode(ids); got != s {
				t.Errorf("%s: decode(Encode(%q)) = %q", enc.Name(), s, got)
			}
			if len(ids) != enc.Count(s) {
				t.Errorf("%s: len(Encode(%q)) = %d, Count = %d", enc.Name(), s, len(ids), enc.Count(s))
			}
		}
	}
}

// TestSplit checks the pre-tokenizers on the traps of the two patterns. The
// expected pieces follow from the regular expressions' backtracking
// semantics; the reference test confirms them against tiktoken.
func TestSplit(t *testing.T) {
	cases := []struct {
		text         string
		o200k, cl100 []string
	}{
		{"hello world", []string{"hello", " world"}, []string{"hello", " world"}},
		// \s+(?!\S): a run of spaces before a word leaves its last space to the word.
		{"a   b", []string{"a", "  ", " b"}, []string{"a", "  ", " b"}},
		{"a   ", []string{"a", "   "}, []string{"a", "   "}},
		{"a \t1", []string{"a", " ", "\t", "1"}, []string{"a", " ", "\t", "1"}},
		// \s*[\r\n]+ ends at the last newline of the run.
		{"x  \n\n  \n  y", []string{"x", "  \n\n  \n", " ", " y"}, []string{"x", "  \n\n  \n", " ", " y"}},
		{"\r\n\r\n", []string{"\r\n\r\n"}, []string{"\r\n\r\n"}},
		// Contractions: a separate piece in cl100k, a suffix in o200k; ſ folds to s.
		{"don't", []string{"don't"}, []string{"don", "'t"}},
		{"YOU'RE", []string{"YOU'RE"}, []string{"YOU", "'RE"}},
		{"it'ſ", []string{"it'ſ"}, []string{"it", "'ſ"}},
		{"'tis", []string{"'tis"}, []string{"'t", "is"}},
		{"x'LLy", []string{"x'LL", "y"}, []string{"x", "'LL", "y"}},
		// o200k case rules.
		{"HTMLParser", []string{"HTMLParser"}, []string{"HTMLParser"}},
		{"iPhone", []string{"i", "Phone"}, []string{"iPhone"}},
		{"ABC.", []string{"ABC", "."}, []string{"ABC", "."}},
		{"ǅungla", []string{"ǅungla"}, []string{"ǅungla"}},
		// A mark is not \p{L}; in o200k it is an "upper" and a "lower" letter
		// and may also be the optional prefix.
		{"\u0301ABC.", []string{"\u0301", "ABC", "."}, []string{"\u0301ABC", "."}},
		{"!\u0301!", []string{"!\u0301", "!"}, []string{"!\u0301!"}},
		{"a\u0301b", []string{"a\u0301b"}, []string{"a", "\u0301b"}},
		// Numbers in groups of up to three; / and newlines after punctuation.
		{"1234567", []string{"123", "456", "7"}, []string{"123", "456", "7"}},
		{"x: //\n/y", []string{"x", ":", " //\n/", "y"}, []string{"x", ":", " //\n", "/y"}},
		// Unicode 16 letters (Go 1.26's unicode package knows only 15.0).
		{"a\U0002EBF0b", []string{"a\U0002EBF0b"}, []string{"a\U0002EBF0b"}},
		{"\u3000x", []string{"\u3000x"}, []string{"\u3000x"}},
	}
	for _, c := range cases {
		for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
			want := c.o200k
			if !enc.o200k {
				want = c.cl100
			}
			if got := enc.pieces(c.text); !slices.Equal(got, want) {
				t.Errorf("%s pieces(%q) = %q, want %q", enc.Name(), c.text, got, want)
			}
		}
	}
}

func (e *Encoding) pieces(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := e.cls.splitCL100k(s, i)
		if e.o200k {
			j = e.cls.splitO200k(s, i)
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// TestClassTable checks every code point of the embedded class table against
// internal/gen/unicode_classes.json, the classes probed from tiktoken's regex
// engine (bench/js/unicode-probe.mjs).
func TestClassTable(t *testing.T) {
	raw, err := os.ReadFile("internal/gen/unicode_classes.json")
	if err != nil {
		t.Fatal(err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		t.Fatal(err)
	}
	want := make([]uint8, 0x110000)
	for name, bit := range map[string]uint8{"L": cL, "N": cN, "S": cS, "U": cU, "W": cW} {
		var ranges [][2]int
		if err := json.Unmarshal(probe[name], &ranges); err != nil {
			t.Fatal(err)
		}
		for _, r := range ranges {
			for c := r[0]; c <= r[1]; c++ {
				want[c] |= bit
			}
		}
	}
	want['\r'] |= cNL
	want['\n'] |= cNL
	want['/'] |= cSlash
	want['\''] |= cApos
	cls := O200kBase().cls
	bad := 0
	for c := rune(0); c <= unicode.MaxRune; c++ {
		if got := cls.rune(uint32(c)); got != want[c] {
			if bad++; bad < 10 {
				t.Errorf("class of U+%04X = %08b, want %08b", c, got, want[c])
			}
		}
		if utf8.ValidRune(c) {
			var buf [4]byte
			s := string(buf[:utf8.EncodeRune(buf[:], c)])
			if got, n := cls.at(s, 0); got != want[c] || n != len(s) {
				t.Fatalf("at(%q) = %08b, %d; want %08b, %d", s, got, n, want[c], len(s))
			}
		}
	}
	// Go's unicode package (Unicode 15.0.0 in Go 1.26) does not know the
	// CJK Extension I letters of Unicode 15.1; tiktoken's regex engine
	// (Unicode 16.0.0) does, and so does the table.
	if cls.rune(0x2EBF0)&cL == 0 {
		t.Error("U+2EBF0 is not a letter in the class table")
	}
	t.Logf("Go unicode %s: IsLetter(U+2EBF0) = %v; tiktoken: true", unicode.Version, unicode.IsLetter(0x2EBF0))
}

// TestConcurrent counts the same texts from several goroutines (run with
// -race): an Encoding is immutable and its scratch pool is per call.
func TestConcurrent(t *testing.T) {
	texts := []string{strings.Repeat("concurrent counting ", 50), strings.Repeat(" ", 3000) + "x", strings.Repeat("日本語", 200)}
	for _, get := range encodings {
		enc := get()
		want := make([]int, len(texts))
		for i, s := range texts {
			want[i] = enc.Count(s)
		}
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Go(func() {
				for k := 0; k < 20; k++ {
					i := (g + k) % len(texts)
					if got := enc.Count(texts[i]); got != want[i] {
						t.Errorf("%s: concurrent Count = %d, want %d", enc.Name(), got, want[i])
					}
				}
			})
		}
		wg.Wait()
	}
}

// TestCountAllocs checks that Count does not allocate for valid UTF-8, long
// pieces included (their scratch memory comes from a pool).
func TestCountAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	text := strings.Repeat("Allocation-free counting, even of 日本語 and 👍🏽. ", 50) + strings.Repeat(" ", 2000) + "x"
	for _, get := range encodings {
		enc := get()
		enc.Count(text) // fill the pool
		if a := testing.AllocsPerRun(20, func() { enc.Count(text) }); a > 0.5 {
			t.Errorf("%s: Count allocates %.1f times per call", enc.Name(), a)
		}
	}
}

// TestCounter checks that *Encoding satisfies Counter.
func TestCounter(t *testing.T) {
	var c Counter = O200kBase()
	if c.Count("a b c") != 3 {
		t.Errorf("Count(\"a b c\") = %d, want 3", c.Count("a b c"))
	}
}
