package pgstore

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/driver"
)

// TestLinesMatchesLinesOf compares the chunked Lines with LinesOf on every
// range of contents whose lines are shorter and longer than a chunk.
func TestLinesMatchesLinesOf(t *testing.T) {
	ctx := context.Background()
	s, err := open(ctx, newURL(t), Options{ChunkBytes: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 6 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(strings.Repeat("é", rng.IntN(3)) + strings.Repeat("x", rng.IntN(40)))
			if rng.IntN(4) == 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		content := b.String()
		if n%2 == 1 {
			content = strings.TrimSuffix(content, "\n") // no final newline
		}
		if _, err := s.Put(ctx, "ns", driver.Measure(workspace.Artifact{Info: workspace.Info{ID: "a"}, Content: content})); err != nil {
			t.Fatal(err)
		}
		total := driver.CountLines(content)
		for start := 0; start <= total+1; start++ {
			for end := start - 1; end <= total+2; end++ {
				want, werr := driver.LinesOf("a", content, start, end)
				got, gerr := s.Lines(ctx, "ns", "a", start, end)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("Lines(%d, %d) of %q: error %v, LinesOf %v", start, end, content, gerr, werr)
				}
				if werr == nil && (got.Start != want.Start || got.End != want.End || got.Total != want.Total || !slices.Equal(got.Lines, want.Lines)) {
					t.Fatalf("Lines(%d, %d) of %q = %+v, LinesOf %+v", start, end, content, got, want)
				}
			}
		}
	}
}
