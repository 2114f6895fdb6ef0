package prune_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
)

// benchHistory returns an Anthropic-shaped history of n tool calls, one a
// minute: alternately a build with about 4 KB of output and a file read.
func benchHistory(b *testing.B, n int) ([]agentctx.Message, time.Time) {
	b.Helper()
	base := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	stdout := strings.Repeat("compiling module ... ok\n", 170)
	out, _ := json.Marshal(map[string]any{"stdout": stdout, "stderr": "", "exitCode": 0})
	var raw []any
	for i := range n {
		id := fmt.Sprintf("toolu_%04d", i)
		name, content := "terminal-execute", string(out)
		if i%2 == 1 {
			name, content = "filesystem-read", stdout
		}
		raw = append(raw,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{"command": "make"}}}},
			map[string]any{"role": "user", "timestamp": base.Add(time.Duration(i) * time.Minute).UnixMilli(), "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}},
		)
	}
	return decode(b, raw), base.Add(time.Duration(n) * time.Minute)
}

// BenchmarkPrune prunes a history of 1,000 tool results (about 4 MB), of
// which about 490 are stale terminal output.
func BenchmarkPrune(b *testing.B) {
	msgs, now := benchHistory(b, 1000)
	for _, bc := range []struct {
		name    string
		counter interface{ Count(string) int }
	}{
		{"o200k", nil},
		{"runes", countRunes{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := prune.Options{Now: func() time.Time { return now }, Counter: bc.counter}
			b.ReportAllocs()
			var res prune.Result
			for b.Loop() {
				res = prune.Prune(msgs, opts)
			}
			b.ReportMetric(float64(res.PrunedCount), "pruned")
		})
	}
}
