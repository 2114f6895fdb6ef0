package pipeline_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
)

// claudeSavedPath is where Claude Code saved a long output in these tests.
const claudeSavedPath = "/home/dev/.claude/projects/-work-app/4f1c/tool-results/toolu_01.txt"

// claudePreview is Claude Code's result for a long output: a preview of
// 2 KB naming the file that holds it whole (2,338 characters in issue 47).
func claudePreview() string {
	return "<persisted-output>\nOutput too large (58.6KB). Full output saved to: " + claudeSavedPath +
		"\n\nPreview (first 2KB):\n" + strings.Repeat("preview line of the build log\n", 70) + "...\n</persisted-output>"
}

// readCall is a call of Claude Code's Read tool on path, answered by
// output, at.
func readCall(id, path, output string, at time.Time) []agentctx.Message {
	in, _ := json.Marshal(map[string]string{"file_path": path})
	return []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Read", in))).WithTimestamp(at.Add(-time.Second)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(output), false))).WithTimestamp(at),
	}
}

// A read of the file a client saved a long output to, whose path an
// earlier result's preview named, is never replaced by a reference again;
// a read of another file as long is (issue 47, item 5).
func TestReadOfClientSavedFileNotOffloaded(t *testing.T) {
	whole := strings.Repeat("     1\tthe whole build log, line after line\n", 1400) // ~58K characters
	t0 := now.Add(-10 * time.Minute)
	first := history(user("build it", t0), exchange("toolu_01", "Bash", "make", claudePreview(), false, t0))
	read := readCall("toolu_02", claudeSavedPath, whole, t0.Add(time.Minute))
	other := readCall("toolu_03", "/home/dev/work/app/big.log", whole, t0.Add(2*time.Minute))
	for _, c := range []struct {
		name  string
		steps [][]agentctx.Message // the requests, each the whole history so far
	}{
		{"one request", [][]agentctx.Message{history(first, read, other)}},
		{"the read in a later request", [][]agentctx.Message{first, history(first, read), history(first, read, other)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPipeline(t, options(t))
			var res *pipeline.Result
			for _, msgs := range c.steps {
				res = mustPrepare(t, p, msgs)
			}
			if got := resultText(res.Messages, "toolu_02"); got != whole {
				t.Errorf("the read of the client's saved file was replaced:\n%.300s", got)
			}
			if got := resultText(res.Messages, "toolu_03"); !strings.HasPrefix(got, "<knowledge_list>") {
				t.Errorf("a read of another file as long was not offloaded:\n%.200s", got)
			}
		})
	}
}

// A read of a file that a tool (not the client) said it wrote is a read
// like any other: a long one is offloaded. Only a client's own preview
// makes a file its saved output (internal/base/clientsaved).
func TestReadOfToolsOwnFileOffloaded(t *testing.T) {
	whole := strings.Repeat("<tr><td>src/lib.rs</td><td>92.4%</td></tr>\n", 1400) // ~60K characters
	t0 := now.Add(-10 * time.Minute)
	report := "test result: ok. 29 passed; 0 failed\n\n    Finished report saved to /tmp/tmpqwh7888i/target/llvm-cov/html\n"
	msgs := history(user("measure the coverage", t0), exchange("toolu_01", "Bash", "cargo llvm-cov --html", report, false, t0),
		readCall("toolu_02", "/tmp/tmpqwh7888i/target/llvm-cov/html/index.html", whole, t0.Add(time.Minute)))
	res := mustPrepare(t, newPipeline(t, options(t)), msgs)
	if got := resultText(res.Messages, "toolu_02"); !strings.HasPrefix(got, "<knowledge_list>") {
		t.Errorf("a long read of a file a tool wrote was kept whole:\n%.200s", got)
	}
}

// A summary's "Stored originals" lists every result that names a saved
// file, whatever its size: Claude Code's 2,338-character preview naming
// the file it saved (with that file on a line of its own), whether it was
// pruned or not, and a small result naming something agentctx stored; a
// small result that names nothing stays out (issue 47, item 6).
func TestSummaryListsResultsNamingSavedFiles(t *testing.T) {
	start := now.Add(-3 * time.Hour)
	for _, c := range []struct {
		name           string
		tool           string // of the preview: a terminal tool's is pruned
		storeOnReplace bool
	}{
		{"pruned preview", "Bash", false},
		{"pruned preview, stored on replace", "Bash", true},
		{"preview kept whole", "Grep", false},
		{"preview kept whole, stored on replace", "Grep", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			msgs := history(
				user("Build it and keep the LEDGER_SEED it prints.", start),
				exchange("toolu_01", c.tool, "make", claudePreview(), false, start.Add(time.Minute)),
				exchange("toolu_ref", "Grep", "seed", `an earlier output: get_knowledge_by_id(artifact_id="tool_result_toolu_00")`, false, start.Add(2*time.Minute)),
				exchange("toolu_small", "Read", "cat VERSION", "1.4.2", false, start.Add(3*time.Minute)),
				exchange("toolu_file", "Read", "cat config.go", strings.Repeat("// a config line of the project\n", 800), false, start.Add(3*time.Minute)),
				growing(20, start.Add(4*time.Minute), true),
			)
			if n := len([]rune(claudePreview())); n >= 4_000 {
				t.Fatalf("the preview has %d characters: the test needs one under the 4,000 of a large result", n)
			}
			o := options(t)
			o.ClearAtLeast = -1
			o.StoreOnReplace = c.storeOnReplace
			o.Compact.Limit = 3_000
			p := newPipeline(t, o)
			res := mustPrepare(t, p, msgs)
			if !res.Report.Step(pipeline.StepCompact).Compact.Compacted {
				t.Fatalf("not compacted: %+v", res.Report.Steps)
			}
			pruned := false
			for _, pr := range res.Report.Step(pipeline.StepPrune).Pruned {
				pruned = pruned || pr.ID == "toolu_01"
			}
			if want := c.tool == "Bash"; pruned != want {
				t.Fatalf("the preview pruned = %v, want %v", pruned, want)
			}
			summary := res.Messages[0].Content.Text()
			ptrs := compact.ParsePointers(summary)
			has := func(key string) bool {
				return slices.ContainsFunc(ptrs, func(p compact.Pointer) bool { return p.Key() == key })
			}
			for _, want := range []string{claudeSavedPath, "tool_result_toolu_01", "tool_result_toolu_ref"} {
				if !has(want) {
					t.Errorf("Stored originals does not list %s:\n%s", want, summary[strings.Index(summary, "## "+compact.PointersTitle):])
				}
			}
			if has("tool_result_toolu_small") {
				t.Errorf("Stored originals lists a small result that names nothing")
			}
			if line := c.tool + " `make` → " + claudeSavedPath; !strings.Contains(summary, line) {
				t.Errorf("the client's file is not on a line of its own (%q):\n%s", line, summary)
			}
		})
	}
}
