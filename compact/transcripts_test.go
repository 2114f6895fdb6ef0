package compact_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/transcript"
)

// sharedTranscripts holds real agent transcripts (outside the repository);
// tests that use it skip when it is absent.
const sharedTranscripts = "../../shared/transcripts"

func transcripts(t testing.TB) []string {
	files, _ := filepath.Glob(filepath.Join(sharedTranscripts, "*.json*"))
	if len(files) == 0 {
		t.Skip("shared transcripts not present")
	}
	return files
}

// TestTranscriptsCompact compacts every readable shared transcript at half
// its size with the extractive summarizer: it must compact, get below the
// threshold, keep pairing, leave the input alone, and write an archive that
// holds exactly the middle.
func TestTranscriptsCompact(t *testing.T) {
	for _, path := range transcripts(t) {
		doc, err := transcript.ReadFile(context.Background(), path, nil)
		if err != nil {
			continue // not a conversation document
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			msgs := doc.Messages
			before := mustJSON(t, msgs)
			chk, err := compact.Check(msgs, compact.Options{})
			if err != nil {
				t.Fatal(err)
			}
			o := compact.Options{Limit: chk.Tokens / 2, Dir: t.TempDir(), Now: fixedClock()}
			start := time.Now()
			res, err := compact.Compact(context.Background(), msgs, o)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Compacted || !res.BelowThreshold {
				t.Fatalf("compacted %v below %v reason %q", res.Compacted, res.BelowThreshold, res.Reason)
			}
			if mustJSON(t, msgs) != before {
				t.Error("input modified")
			}
			if agentctx.ValidatePairing(msgs).Valid && !agentctx.ValidatePairing(res.Messages).Valid {
				t.Errorf("pairing broken: %v", agentctx.ValidatePairing(res.Messages).Err())
			}
			data, err := os.ReadFile(res.Archive)
			if err != nil {
				t.Fatal(err)
			}
			archived := parse(t, string(data))
			p := compact.Split(msgs, o)
			if mustJSON(t, archived) != mustJSON(t, p.Middle) {
				t.Error("the archive does not hold the middle")
			}
			for _, sec := range []string{"## Goals and key decisions", "## File operations", "## Tool calls", "## Current state", "## Errors and fixes"} {
				if !strings.Contains(res.Summary, sec) {
					t.Errorf("summary lacks %s", sec)
				}
			}
			s := res.Stats
			t.Logf("%d messages: %d → %d tokens (ratio %.3f), %d compacted, %d kept, summary %d chars, %v (extractive, archive included)",
				len(msgs), s.OriginalTokenCount, s.CompactedTokenCount, s.CompactionRatio, s.CompactedMessageCount, s.RetainedMessageCount, len(res.Summary), took)
		})
	}
}

// BenchmarkTranscriptCompact measures compaction of the longest shared
// transcript (a Claude Code session) with the extractive summarizer, at a
// limit that forces it; the time includes counting, splitting, the archive
// and the summary.
func BenchmarkTranscriptCompact(b *testing.B) {
	files := transcripts(b)
	var longest []agentctx.Message
	var size int
	for _, path := range files {
		doc, err := transcript.ReadFile(context.Background(), path, nil)
		if err != nil {
			continue
		}
		if n := jsonSize(b, doc.Messages); n > size {
			longest, size = doc.Messages, n
		}
	}
	// An instant model: what remains is the time spent outside the model
	// call (rendering, shortening, splitting into parts).
	instant := &compact.ModelSummarizer{Model: compact.ModelFunc(func(context.Context, string, string) (string, error) {
		return "## Goals and key decisions\n- (model answer)", nil
	})}
	for _, sum := range []struct {
		name string
		s    compact.Summarizer
	}{{"extractive", compact.Extractive{}}, {"model-excluded", instant}} {
		b.Run(sum.name, func(b *testing.B) {
			o := compactOpts(b, longest, nil)
			o.Summarizer = sum.s
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var res *compact.Result
			for b.Loop() {
				var err error
				if res, err = compact.Compact(context.Background(), longest, o); err != nil || !res.Compacted {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(res.Stats.OriginalTokenCount), "tokens-before")
			b.ReportMetric(float64(res.Stats.CompactedTokenCount), "tokens-after")
		})
	}
}
