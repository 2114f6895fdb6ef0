package pipeline_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
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
