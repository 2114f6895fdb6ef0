package offload_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/offload"
)

// benchHistory returns a 1,000-message history: 500 tool calls answered by
// 500 results, 200 of them large (size characters) and 300 small, as
// Anthropic blocks and OpenAI tool messages alternately.
func benchHistory(size int) []agentctx.Message {
	msgs := make([]agentctx.Message, 0, 1000)
	large := 0
	for i := range 500 {
		id := "toolu_" + strconv.Itoa(i)
		msgs = append(msgs, toolUseMsg(id))
		content := fmt.Sprintf("ok %d", i)
		if i%5 < 2 { // 2 of every 5 → 200 large results
			content = fmt.Sprintf("%d %s", i, strings.Repeat("line of output\n", size/15))
			large++
		}
		if i%2 == 0 {
			msgs = append(msgs, toolResultMsg(id, agentctx.Text(content)))
		} else {
			msgs = append(msgs, toolMsg(id, content))
		}
	}
	if large != 200 {
		panic("benchHistory: wrong number of large results")
	}
	return msgs
}

// BenchmarkBatch offloads the 200 large results (8 KB each) of a
// 1,000-message history into a fresh directory each time.
func BenchmarkBatch(b *testing.B) {
	msgs := benchHistory(8 << 10)
	root := b.TempDir()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(root, strconv.Itoa(i))
		res, err := offload.Batch(b.Context(), msgs, offload.BatchOptions{Dir: dir})
		if err != nil || res.OffloadedCount != 200 {
			b.Fatal(res.OffloadedCount, err)
		}
		if i%50 == 49 { // keep the disk use bounded
			b.StopTimer()
			os.RemoveAll(root)
			os.Mkdir(root, 0o755)
			b.StartTimer()
		}
	}
}

// BenchmarkBatchRerun runs Batch again on a directory that already holds
// the files (the identical-content path: compare, reuse, write nothing).
func BenchmarkBatchRerun(b *testing.B) {
	msgs := benchHistory(8 << 10)
	dir := b.TempDir()
	if _, err := offload.Batch(b.Context(), msgs, offload.BatchOptions{Dir: dir}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := offload.Batch(b.Context(), msgs, offload.BatchOptions{Dir: dir})
		if err != nil || res.OffloadedCount != 200 {
			b.Fatal(res.OffloadedCount, err)
		}
	}
}

// BenchmarkBatchNothingToDo measures the scan of the same history when no
// result reaches the threshold.
func BenchmarkBatchNothingToDo(b *testing.B) {
	msgs := benchHistory(8 << 10)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		res, err := offload.Batch(b.Context(), msgs, offload.BatchOptions{Dir: filepath.Join(dir, "never"), MinChars: 1 << 20})
		if err != nil || res.OffloadedCount != 0 {
			b.Fatal(res.OffloadedCount, err)
		}
	}
}

// BenchmarkMessage offloads one 8 KB result to disk.
func BenchmarkMessage(b *testing.B) {
	msg := toolMsg("toolu_1", strings.Repeat("line of output\n", 8<<10/15))
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := offload.MessageToDir(b.Context(), msg, dir, "s"); err != nil {
			b.Fatal(err)
		}
	}
}
