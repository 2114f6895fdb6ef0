package tokens

import (
	"strings"
	"sync"
	"testing"
)

// tokenList returns every token of v, indexed by id.
func (v *vocab) tokenList() []string {
	toks := make([]string, len(v.lens))
	off := 0
	for id := range toks {
		l := int(v.lens[id])
		toks[id] = v.blob[off : off+l]
		off += l
	}
	return toks
}

var (
	o200kTokens  = sync.OnceValue(func() []string { return O200kBase().voc.tokenList() })
	cl100kTokens = sync.OnceValue(func() []string { return Cl100kBase().voc.tokenList() })
)

// decode returns the bytes of the token ids, the inverse of Encode.
func (e *Encoding) decode(ids []int) string {
	toks := cl100kTokens()
	if e.o200k {
		toks = o200kTokens()
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(toks[id])
	}
	return b.String()
}

// TestVocabLookup looks up every token, alone and inside a longer string (so
// the lookup's fast paths that read past the token are exercised), and
// strings that are not tokens.
func TestVocabLookup(t *testing.T) {
	for _, enc := range []*Encoding{O200kBase(), Cl100kBase()} {
		v := enc.voc
		toks := v.tokenList()
		if want := map[string]int{O200kBaseName: 199998, Cl100kBaseName: 100256}[enc.Name()]; len(toks) != want {
			t.Errorf("%s: %d tokens, want %d", enc.Name(), len(toks), want)
		}
		seen := make(map[string]bool, len(toks))
		for id, tok := range toks {
			seen[tok] = true
			if got := v.rank(tok, 0, len(tok)); got != uint32(id) {
				t.Fatalf("%s: rank(%q) = %d, want %d", enc.Name(), tok, got, id)
			}
			padded := "\xff" + tok + "\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7"
			if got := v.rank(padded, 1, len(tok)); got != uint32(id) {
				t.Fatalf("%s: rank(%q inside %q) = %d, want %d", enc.Name(), tok, padded, got, id)
			}
		}
		// Strings one byte longer than a token (most are not tokens).
		misses := 0
		for id, tok := range toks {
			if id%7 != 0 {
				continue
			}
			for _, s := range []string{tok + "\x00", "\x00" + tok, tok + tok[:1]} {
				want := noRank
				if seen[s] {
					continue
				}
				if got := v.rank(s, 0, len(s)); got != want {
					t.Fatalf("%s: rank(%q) = %d, want no token", enc.Name(), s, got)
				}
				misses++
			}
		}
		if misses < 1000 {
			t.Errorf("%s: only %d misses checked", enc.Name(), misses)
		}
	}
}
