package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// A large tool result is stored whole and replaced by a <knowledge_list>
// entry; a small one stays in the context. The model reads the large one
// back with the workspace's tools.
func Example() {
	ctx := context.Background()
	ws := workspace.New(memstore.New(), workspace.Options{
		SessionID: "s1",
		Now:       func() time.Time { return time.Date(2026, 11, 22, 7, 14, 0, 0, time.UTC) },
	})

	var log strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&log, "step %d: ok, all checks passed on this worker\n", i)
	}
	msgs := []agentctx.Message{
		agentctx.NewMessage("assistant", agentctx.BlockList(
			agentctx.ToolUseBlock("toolu_01", "bash", json.RawMessage(`{"command":"make test"}`)),
			agentctx.ToolUseBlock("toolu_02", "bash", json.RawMessage(`{"command":"pwd"}`)))),
		agentctx.NewMessage("user", agentctx.BlockList(
			agentctx.ToolResultBlock("toolu_01", agentctx.Text(log.String()), false),
			agentctx.ToolResultBlock("toolu_02", agentctx.Text("/src"), false))),
	}
	res, err := ws.Offload(ctx, msgs)
	if err != nil {
		panic(err)
	}
	fmt.Println("inlined:", res.Inlined, "indexed:", res.Indexed)
	replacement := res.Messages[1].Content.Blocks()[0].Content.Text()
	fmt.Println(strings.SplitN(replacement, "\n", 3)[1])

	// The model calls a read tool.
	text, _ := ws.Execute(ctx, "get_knowledge_by_lines", json.RawMessage(`{"artifact_id":"tool_result_toolu_01","start_line":1999,"end_line":5000}`))
	fmt.Println(text)
	text, _ = ws.Execute(ctx, "grep_knowledge", json.RawMessage(`{"artifact_id":"tool_result_toolu_01","pattern":"^step 100\\b","context_lines":1}`))
	fmt.Println(text)
	// Output:
	// inlined: 1 indexed: 1
	// <knowledge id="tool_result_toolu_01" tool_name="bash" action_name="" type="text" chars="94893" lines="2000">
	// Lines 1999-2000 of 2000
	// step 1999: ok, all checks passed on this worker
	// step 2000: ok, all checks passed on this worker
	// 99-step 99: ok, all checks passed on this worker
	// 100:step 100: ok, all checks passed on this worker
	// 101-step 101: ok, all checks passed on this worker
}

// Tool definitions go to the model API as they are: the JSON of a
// ToolDefinition is an Anthropic tool, OpenAI() gives the Chat Completions
// shape.
func ExampleWorkspace_Tools() {
	ws := workspace.New(memstore.New(), workspace.Options{})
	for _, d := range ws.Tools() {
		fmt.Println(d.Name)
	}
	b, _ := json.Marshal(ws.Tools()[0].OpenAI())
	fmt.Println(string(b)[:60])
	// Output:
	// get_knowledge_by_id
	// get_knowledge_by_lines
	// grep_knowledge
	// grep_session_knowledge
	// query_artifacts
	// get_tool_result_offload_info
	// {"type":"function","function":{"name":"get_knowledge_by_id",
}
