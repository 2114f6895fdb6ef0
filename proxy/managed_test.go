package proxy

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
)

func TestFindMarks(t *testing.T) {
	call := func(name, input string) agentctx.Message {
		return agentctx.NewMessage("assistant", agentctx.BlockList(agentctx.Block{Type: agentctx.BlockToolUse, ID: "t1", Name: name, Input: json.RawMessage(input)}))
	}
	result := func(text string) agentctx.Message {
		return agentctx.NewMessage("user", agentctx.BlockList(agentctx.Block{Type: agentctx.BlockToolResult, ID: "t1", Content: agentctx.Text(text)}))
	}
	for _, tc := range []struct {
		name string
		msgs []agentctx.Message
		want Marks
	}{
		{"plain", []agentctx.Message{call("Bash", `{"command":"ls"}`), result("a.go\nb.go")}, Marks{}},
		{"reference", []agentctx.Message{call("Bash", `{"command":"ls"}`), result("<knowledge_list>\n<knowledge id=\"tool_result_t1\">x</knowledge>\n</knowledge_list>")}, Marks{References: 1}},
		{"placeholder", []agentctx.Message{call("Bash", `{"command":"ls"}`), result(prune.DefaultPlaceholder)}, Marks{References: 1}},
		{"English placeholder", []agentctx.Message{call("Bash", `{"command":"ls"}`), result(prune.EnglishPlaceholder)}, Marks{References: 1}},
		{"mcp read tool", []agentctx.Message{call("mcp__agentctx__get_knowledge_by_id", `{"artifact_id":"tool_result_t0"}`), result("x")}, Marks{ReadBacks: 1}},
		{"read of a stored file", []agentctx.Message{call("Read", `{"file_path":"/home/u/.local/state/agentctx/projects/p-1/default/tool_result_t0.txt"}`), result("x")}, Marks{ReadBacks: 1}},
		{"read of another file", []agentctx.Message{call("Read", `{"file_path":"/src/tool_result_t0.txt"}`), result("x")}, Marks{}},
		{"stored originals", []agentctx.Message{agentctx.NewMessage("assistant", agentctx.Text("see\n## Stored originals\n- x"))}, Marks{Summaries: 1}},
	} {
		if got := FindMarks(tc.msgs); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
