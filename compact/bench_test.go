package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
)

// benchHistory is a coding session of about size bytes of JSON: requests,
// tool calls with inputs, and large tool results.
func benchHistory(size int) []agentctx.Message {
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleSystem, agentctx.Text("You are a coding agent."))}
	total := 0
	for i := 0; total < size; i++ {
		id := fmt.Sprintf("toolu_%06d", i)
		in, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("go test ./pkg%d/...", i), "description": "run the tests"})
		out := fmt.Sprintf("=== RUN Test%d\n%s--- PASS\nok pkg%d 0.01s", i, strings.Repeat("log line with some words in it\n", 120), i)
		batch := []agentctx.Message{
			agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("Please fix the failing test in pkg%d.", i))),
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.TextBlock("Running the tests first."), agentctx.ToolUseBlock(id, "Bash", in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(out), i%5 == 0))),
		}
		for _, m := range batch {
			b, _ := m.MarshalJSON()
			total += len(b)
		}
		msgs = append(msgs, batch...)
	}
	return msgs
}

func jsonSize(tb testing.TB, msgs []agentctx.Message) int {
	b, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		tb.Fatal(err)
	}
	return len(b)
}

// compactOpts compact with the extractive summarizer and an archive, at a
// limit that forces compaction.
func compactOpts(tb testing.TB, msgs []agentctx.Message, tc tokens.Counter) compact.Options {
	chk, err := compact.Check(msgs, compact.Options{Counter: tc})
	if err != nil {
		tb.Fatal(err)
	}
	return compact.Options{Counter: tc, Limit: chk.Tokens / 2, Dir: tb.TempDir(), Now: fixedClock()}
}

// Memory during compaction stays under 2× the messages' size: everything
// Compact allocates (token counting, the archive, the summary, the new
// list) is bounded by the bytes allocated, and this checks their total.
func TestCompactMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation figures")
	}
	msgs := benchHistory(4 << 20)
	size := jsonSize(t, msgs)
	o := compactOpts(t, msgs, tokens.O200kBase())
	if _, err := compact.Compact(context.Background(), msgs, o); err != nil { // warm up: build the encoder
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := compact.Compact(context.Background(), msgs, o)
	runtime.ReadMemStats(&after)
	if err != nil || !res.Compacted {
		t.Fatalf("res %+v err %v", res, err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	ratio := float64(alloc) / float64(size)
	t.Logf("messages %d bytes, allocated %d bytes during compaction (%.2f×)", size, alloc, ratio)
	if ratio >= 2 {
		t.Errorf("compaction allocated %.2f× the messages' size, want < 2×", ratio)
	}
}

func BenchmarkCompact(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		msgs := benchHistory(size)
		n := jsonSize(b, msgs)
		b.Run(fmt.Sprintf("extractive/%dMiB", size>>20), func(b *testing.B) {
			o := compactOpts(b, msgs, tokens.O200kBase())
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			start := ms.TotalAlloc
			for b.Loop() {
				res, err := compact.Compact(context.Background(), msgs, o)
				if err != nil || !res.Compacted {
					b.Fatal(res, err)
				}
			}
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.TotalAlloc-start)/float64(b.N)/float64(n), "alloc/input")
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	msgs := benchHistory(1 << 20)
	b.SetBytes(int64(jsonSize(b, msgs)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compact.Check(msgs, compact.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtractive(b *testing.B) {
	msgs := benchHistory(1 << 20)
	b.SetBytes(int64(jsonSize(b, msgs)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (compact.Extractive{}).Summarize(context.Background(), compact.Request{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteArchive(b *testing.B) {
	msgs := benchHistory(1 << 20)
	b.SetBytes(int64(jsonSize(b, msgs)))
	b.ReportAllocs()
	dir := b.TempDir()
	for b.Loop() {
		if _, err := compact.WriteArchive(context.Background(), msgs, compact.ArchiveOptions{Dir: dir}); err != nil {
			b.Fatal(err)
		}
	}
}
