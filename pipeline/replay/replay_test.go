package replay_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/transcript"
)

// sharedTranscripts holds the project's development transcripts, outside
// the repository; tests that use it skip when it is absent.
const sharedTranscripts = "../../../shared/transcripts"

// TestReplayExampleSession replays examples/session.json (no usage).
func TestReplayExampleSession(t *testing.T) {
	doc, err := transcript.ReadFile(context.Background(), filepath.Join("..", "..", "examples", "session.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Run(context.Background(), doc, replay.Options{Options: pipeline.Options{Compact: compact.Options{Limit: 14_000}, Clearing: pipeline.ClearBatched}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 49 || res.Compactions != 1 || res.CacheBreaks > res.Requests/20 || res.PrefixStableRatio < 0.95 {
		t.Errorf("replay, batched: %d requests, %d compactions, %d breaks, stable %.3f", res.Requests, res.Compactions, res.CacheBreaks, res.PrefixStableRatio)
	}
	// Priced clearing breaks the cache more often, where that is free (a
	// cold cache) or pays, and costs no more.
	priced, err := replay.Run(context.Background(), doc, replay.Options{Options: pipeline.Options{Compact: compact.Options{Limit: 14_000}}})
	if err != nil {
		t.Fatal(err)
	}
	if priced.Requests != 49 || priced.Compactions != 1 || priced.CacheCost > res.CacheCost {
		t.Errorf("replay, priced: %d requests, %d compactions, cache cost %d (batched %d)", priced.Requests, priced.Compactions, priced.CacheCost, res.CacheCost)
	}
	t.Logf("cache cost: batched %d, priced %d", res.CacheCost, priced.CacheCost)
}

// TestReplaySharedTranscripts checks the targets of the live-session work
// on the Claude Code sessions in ../shared/transcripts, when present.
func TestReplaySharedTranscripts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedTranscripts, "*.jsonl"))
	ran := 0
	for _, f := range files {
		doc, err := transcript.ReadOptions{WholeHistory: true}.ReadFile(context.Background(), f, nil)
		if err != nil || doc.Format != transcript.FormatClaudeCode {
			continue
		}
		ran++
		t.Run(filepath.Base(f), func(t *testing.T) {
			res, err := replay.Run(context.Background(), doc, replay.Options{Options: pipeline.Options{Compact: compact.Options{Limit: 100_000}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d requests, %d compactions, %d cache breaks, prefix stable %.4f, count error median %.2f%% p95 %.2f%% (n %d)",
				res.Requests, res.Compactions, res.CacheBreaks, res.PrefixStableRatio, res.CountError.MedianPct, res.CountError.P95Pct, res.CountError.N)
			if res.Compactions > 2 || res.CacheBreaks*20 > res.Requests || res.PrefixStableRatio < 0.95 {
				t.Errorf("cache: %d compactions, %d breaks in %d requests, stable %.3f", res.Compactions, res.CacheBreaks, res.Requests, res.PrefixStableRatio)
			}
			if res.CountError.N > 0 && (res.CountError.MedianPct > 3 || res.CountError.P95Pct > 10) {
				t.Errorf("count error: median %.2f%%, p95 %.2f%%", res.CountError.MedianPct, res.CountError.P95Pct)
			}
		})
	}
	if ran == 0 {
		t.Skip("no Claude Code transcripts in " + sharedTranscripts)
	}
}
