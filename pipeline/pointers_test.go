package pipeline_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
)

// pointerHistory is a session whose early part holds an offloaded result
// (toolu_big), a large result sent whole (toolu_file), a small one
// (toolu_small) and stale terminal output that prune replaces.
func pointerHistory() []agentctx.Message {
	start := now.Add(-3 * time.Hour)
	return history(
		user("Find the value of LEDGER_SEED in the build output and keep it.", start),
		exchange("toolu_big", "Bash", "make all", "LEDGER_SEED=4711\n"+strings.Repeat("compiling module\n", 2_500), false, start.Add(time.Minute)),
		exchange("toolu_file", "Read", "cat config.go", strings.Repeat("// config line\n", 400), false, start.Add(2*time.Minute)),
		exchange("toolu_small", "Read", "cat VERSION", "1.4.2", false, start.Add(3*time.Minute)),
		growing(20, start.Add(4*time.Minute), true),
	)
}

// originalResult returns the original text of the tool result with id in msgs.
func originalResult(msgs []agentctx.Message, id string) (string, bool) {
	for r := range agentctx.ToolResults(msgs) {
		if r.ID == id {
			return r.Content.AsText(), true
		}
	}
	return "", false
}

// TestSummaryPointers: the summary of a prepared session names the
// artifact id and the content file of every pruned, offloaded or large
// result it covers, and of its archive; the files exist and hold the
// originals. A later compaction keeps them.
func TestSummaryPointers(t *testing.T) {
	msgs := pointerHistory()
	o := options(t)
	o.ClearAtLeast = -1 // prune stale output at once
	o.Compact.Limit = 3_000
	p := newPipeline(t, o)
	res := mustPrepare(t, p, msgs)
	cr := res.Report.Step(pipeline.StepCompact).Compact
	if !cr.Compacted {
		t.Fatalf("not compacted: %+v", res.Report.Steps)
	}
	summary := res.Messages[0].Content.Text()
	ptrs := compact.ParsePointers(summary)
	byID := map[string]compact.Pointer{}
	for _, ptr := range ptrs {
		byID[ptr.ArtifactID] = ptr
	}

	// Which results were summarized, and which were pruned.
	sent := map[string]bool{}
	for r := range agentctx.ToolResults(res.Messages) {
		sent[r.ID] = true
	}
	pruned := map[string]bool{}
	for _, pr := range res.Report.Step(pipeline.StepPrune).Pruned {
		pruned[msgs[pr.MessageIndex].Content.Blocks()[pr.BlockIndex].ToolUseID] = true
	}
	if len(pruned) == 0 {
		t.Fatal("nothing pruned: the test needs pruned results")
	}
	summarized := 0
	for r := range agentctx.ToolResults(msgs) {
		if sent[r.ID] {
			continue
		}
		summarized++
		id := "tool_result_" + r.ID
		ptr, ok := byID[id]
		want := pruned[r.ID] || r.ID == "toolu_big" || r.ID == "toolu_file"
		if ok != want {
			t.Errorf("%s (pruned %v, %d chars): pointer %v, want %v", r.ID, pruned[r.ID], r.Content.Chars(), ok, want)
		}
		if !ok {
			continue
		}
		if !filepath.IsAbs(ptr.Path) || !strings.Contains(summary, ptr.Path) {
			t.Errorf("%s: path %q is not absolute or not in the summary", id, ptr.Path)
		}
		data, err := os.ReadFile(ptr.Path)
		if err != nil || string(data) != r.Content.AsText() {
			t.Errorf("%s: %s does not hold the original (%d bytes, want %d): %v", id, ptr.Path, len(data), len(r.Content.AsText()), err)
		}
		if ptr.Chars != r.Content.Chars() {
			t.Errorf("%s: %d chars, want %d", id, ptr.Chars, r.Content.Chars())
		}
	}
	if summarized == 0 || byID["tool_result_toolu_big"].ToolName != "Bash" || byID["tool_result_toolu_big"].Input != "make all" {
		t.Errorf("summarized %d results; pointers %+v", summarized, ptrs)
	}
	// The archive: its id and its file, which holds the summarized
	// messages.
	arch := ptrs[len(ptrs)-1]
	if arch.Kind != compact.PointerArchive || arch.ArtifactID != cr.Archive || !filepath.IsAbs(arch.Path) {
		t.Fatalf("last pointer %+v, want the archive %s with its path", arch, cr.Archive)
	}
	data, err := os.ReadFile(arch.Path)
	var archived []json.RawMessage
	if err != nil || json.Unmarshal(data, &archived) != nil || len(archived) != cr.Stats.CompactedMessageCount || arch.Messages != len(archived) {
		t.Errorf("archive %s: %d messages, want %d (%v)", arch.Path, len(archived), cr.Stats.CompactedMessageCount, err)
	}
	if !strings.Contains(string(data), "LEDGER_SEED=4711") {
		t.Error("the archive does not hold the early value")
	}

	// The history grows and is compacted again: the first summary is in
	// the middle, and its pointers are in the new one.
	longer := slices.Clone(msgs)
	longer = append(longer, growing(20, now.Add(-40*time.Minute), true)...)
	for i := len(msgs); i < len(longer); i++ {
		// New ids for the new exchanges.
		longer[i] = renameCalls(longer[i], "more_")
	}
	again := mustPrepare(t, p, longer)
	if c := again.Report.Step(pipeline.StepCompact).Compact; !c.Compacted || c.Archive == cr.Archive {
		t.Fatalf("second request did not compact again: %+v", c)
	}
	second := compact.ParsePointers(again.Messages[0].Content.Text())
	keys := map[string]bool{}
	for _, ptr := range second {
		keys[ptr.Key()] = true
	}
	for _, ptr := range ptrs {
		if !keys[ptr.Key()] {
			t.Errorf("the second summary lost %s", ptr.Key())
		}
	}
	t.Logf("pointers: %d in the first summary, %d in the second", len(ptrs), len(second))
	if len(second) <= len(ptrs) || second[len(second)-1].Kind != compact.PointerArchive {
		t.Errorf("second summary: %d pointers (first %d), last %+v", len(second), len(ptrs), second[len(second)-1])
	}
}

// renameCalls prefixes the tool call ids of m.
func renameCalls(m agentctx.Message, prefix string) agentctx.Message {
	if m.Content.Kind() != agentctx.ContentBlocks {
		return m
	}
	blocks := slices.Clone(m.Content.Blocks())
	for i := range blocks {
		switch blocks[i].Type {
		case agentctx.BlockToolUse:
			blocks[i].ID = prefix + blocks[i].ID
		case agentctx.BlockToolResult:
			blocks[i].ToolUseID = prefix + blocks[i].ToolUseID
		}
	}
	return m.WithContent(agentctx.BlockList(blocks...))
}
