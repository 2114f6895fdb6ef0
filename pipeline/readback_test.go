package pipeline_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
)

// An agent that reads an offloaded result back, with a read tool or with
// its own file tool on the artifact's content file, gets it whole: the
// read is stored, never replaced by a new reference (issue 21: Claude
// Code's Read of a 60,127-character content file came back as a
// 1,352-character reference, four times in a row).
func TestReadingBackIsNotOffloadedAgain(t *testing.T) {
	o := options(t)
	p := newPipeline(t, o)
	big := strings.Repeat("row of a large log\n", 2000) + "TOKEN=tk-7f3a\n" + strings.Repeat("more output\n", 2000)
	at := now.Add(-time.Minute)
	hist := history(user("find the token", at), exchange("toolu_big", "Bash", "cat big.log", big, false, at))
	res, err := prepare(t, p, hist)
	if err != nil {
		t.Fatal(err)
	}
	ref := resultText(res.Messages, "toolu_big")
	if !strings.HasPrefix(ref, "<knowledge_list>") {
		t.Fatalf("the large result was not replaced: %.100s", ref)
	}
	root, _ := filepath.Abs(o.WorkspaceDir)
	path := filepath.Join(root, "default", "tool_result_toolu_big.txt")
	if got, err := p.Workspace().Store().(workspace.Pather).Path(p.Workspace().Namespace(), "tool_result_toolu_big"); err == nil {
		path, _ = filepath.Abs(got)
	}
	reads := []struct{ id, tool, input string }{
		{"toolu_read", "Read", `{"file_path":"` + path + `"}`},
		{"toolu_mcp", "mcp__agentctx__get_knowledge_by_id", `{"artifact_id":"tool_result_toolu_big"}`},
	}
	for _, r := range reads {
		hist = append(hist,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(r.id, r.tool, json.RawMessage(r.input)))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(r.id, agentctx.Text(big), false))))
		res, err = prepare(t, p, hist)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(res.Messages, r.id); got != big {
			t.Fatalf("%s: the read-back reached the model as %d characters: %.120s", r.tool, len(got), got)
		}
	}
}
