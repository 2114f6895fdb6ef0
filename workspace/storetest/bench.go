package storetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/workspace"
)

// BenchmarkArtifacts is the number of artifacts Benchmark stores.
const BenchmarkArtifacts = 10_000

// benchArtifact returns artifact i: about 2 KB of log lines in one of 10
// sessions, with the line "needle-<i> found" in the middle.
func benchArtifact(i int) workspace.Artifact {
	var b strings.Builder
	b.Grow(2200)
	for l := range 30 {
		if l == 15 {
			fmt.Fprintf(&b, "needle-%d found\n", i)
			continue
		}
		fmt.Fprintf(&b, "2026-11-22T07:%02d:%02d INFO worker-%d processed item %d of batch %d in %dms\n",
			l, i%60, i%8, i*31+l, i/100, (i*7+l*13)%997)
	}
	id := "call_" + strconv.Itoa(i)
	return workspace.Artifact{
		Info: workspace.Info{
			ID:   workspace.ArtifactID(id),
			Type: workspace.TypeText,
			Metadata: workspace.Metadata{
				workspace.KeyContextType: workspace.ContextToolResult, workspace.KeyBizID: id,
				workspace.KeySessionID: "session-" + strconv.Itoa(i%10), workspace.KeyTaskID: "task-1",
				workspace.KeyToolName: "bash",
			},
			Created: t0.Add(time.Duration(i) * time.Millisecond),
		},
		Content: b.String(),
	}
}

func fill(b *testing.B, s workspace.Store, n int) {
	for i := range n {
		if _, err := s.Put(bg, "bench", benchArtifact(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// Benchmark measures a backend: putting 10,000 artifacts into an empty
// store, and, on a store that holds 10,000 (about 2 KB each, in 10
// sessions), one Put, one Get, a grep of one artifact, a grep over one
// session (1,000 artifacts) and over all of them, with a rare literal and
// with a pattern no index can narrow, and a query of one session.
func Benchmark(b *testing.B, open Opener) {
	b.Run("Put10000", func(b *testing.B) {
		for i := range b.N {
			dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			s := open(b, dir)
			fill(b, s, BenchmarkArtifacts)
			s.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*BenchmarkArtifacts), "ns/artifact")
	})

	s := open(b, b.TempDir())
	defer s.Close()
	fill(b, s, BenchmarkArtifacts)
	session := workspace.Filter{Metadata: workspace.Metadata{workspace.KeyContextType: workspace.ContextToolResult, workspace.KeySessionID: "session-2"}}
	grep := func(name string, q workspace.GrepQuery, wantTotal int) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				res, err := workspace.Grep(bg, s, "bench", q)
				if err != nil {
					b.Fatal(err)
				}
				if wantTotal >= 0 && res.Total != wantTotal {
					b.Fatalf("total %d, want %d", res.Total, wantTotal)
				}
			}
		})
	}
	grep("GrepOne", workspace.GrepQuery{ID: workspace.ArtifactID("call_4242"), Pattern: `in \d+ms$`}, 29)
	grep("GrepSessionLiteral", workspace.GrepQuery{Filter: session, Pattern: `needle-4242 found`}, 1)
	grep("GrepAllLiteral", workspace.GrepQuery{Pattern: `needle-4242 found`}, 1)
	grep("GrepAllLiteralIgnoreCase", workspace.GrepQuery{Pattern: `NEEDLE-4242 FOUND`, IgnoreCase: true}, 1)
	grep("GrepAllNoLiteral", workspace.GrepQuery{Pattern: `^[a-z]+-\d{4} [a-z]+$`}, BenchmarkArtifacts-1000)
	b.Run("QuerySession", func(b *testing.B) {
		for b.Loop() {
			list, err := s.Query(bg, "bench", session)
			if err != nil || len(list) != BenchmarkArtifacts/10 {
				b.Fatal(len(list), err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := s.Get(bg, "bench", workspace.ArtifactID("call_"+strconv.Itoa(i%BenchmarkArtifacts))); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
	})
	b.Run("Put", func(b *testing.B) {
		i := BenchmarkArtifacts
		for b.Loop() {
			if _, err := s.Put(bg, "bench", benchArtifact(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
