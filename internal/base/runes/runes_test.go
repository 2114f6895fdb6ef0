package runes

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCountIsRuneCount holds Count to utf8.RuneCount on random bytes
// (ASCII, multi-byte, cut and invalid sequences), and to no allocation
// where utf8.RuneCount copies.
func TestCountIsRuneCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	parts := []string{"a", "é", "日本", "😀", "\xff", "\xe6\x97", "\x97", "\xf0\x9f", "\n"}
	for range 10000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		p := []byte(b.String())
		if got, want := Count(p), utf8.RuneCount(p); got != want {
			t.Fatalf("Count(%q) = %d, want %d", p, got, want)
		}
	}
	long := []byte(strings.Repeat("wörld ✓ ", 1000))
	if n := testing.AllocsPerRun(100, func() { Count(long) }); n > 0 {
		t.Errorf("Count allocates %.0f times", n)
	}
	if n := testing.AllocsPerRun(100, func() { utf8.RuneCount(long) }); n == 0 {
		t.Log("utf8.RuneCount no longer copies: Count may go")
	}
}
