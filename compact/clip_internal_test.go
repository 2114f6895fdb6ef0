package compact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// clipRunes is clip as it was, rune by rune for every string: what clip
// must agree with.
func clipRunes(s string, max int) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = n > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
		if max > 0 && n > max {
			return strings.TrimRight(runePrefix(b.String(), max-1), " ") + "…"
		}
	}
	return b.String()
}

// TestClipAgrees holds clip to its rune-by-rune form on random strings
// of words, spaces of every kind, multi-byte and invalid bytes, for
// limits around their lengths.
func TestClipAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	parts := []string{"go", "test", "./...", " ", "  ", "\t", "\n", "\u00a0", "é", "日本", "\xff", "\xe6\x97", "x", "…", "-run", "TestX"}
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		s := b.String()
		max := rng.IntN(len(s)+3) - 1
		if got, want := clip(s, max), clipRunes(s, max); got != want {
			t.Fatalf("case %d: clip(%q, %d) = %q, want %q", i, s, max, got, want)
		}
	}
}

// TestClipCleanAllocatesNothing: a key line that needs no change is
// returned as it is (the key line of every call a compaction summarizes
// was built rune by rune: 3.3 MB for 10,000 calls; issue 24 item 7).
func TestClipCleanAllocatesNothing(t *testing.T) {
	s := "go test ./pkg/sync_session/... -run TestHandleInfo"
	if n := testing.AllocsPerRun(100, func() { _ = clip(s, 120) }); n > 0 {
		t.Errorf("clip of a clean line allocates %.0f times", n)
	}
	if got := clip(s, 10); got != "go test .…" {
		t.Errorf("clip(%q, 10) = %q", s, got)
	}
}
