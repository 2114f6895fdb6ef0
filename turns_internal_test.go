package agentctx

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestToolResultTurnIsTheLatestCallBefore holds ToolResults' and
// MapToolResults' Turn, which look at the message right before first, to
// its definition (the latest message before the result with a call of its
// id, else -1) on random lists with reused ids, calls several messages
// back, OpenAI tool messages and results without a call.
func TestToolResultTurnIsTheLatestCallBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 7))
	for trial := range 300 {
		var msgs []Message
		for range 1 + r.IntN(30) {
			id := fmt.Sprintf("t%d", r.IntN(5))
			switch r.IntN(5) {
			case 0:
				msgs = append(msgs, NewMessage(RoleAssistant, BlockList(ToolUseBlock(id, "Bash", []byte(`{}`)), ToolUseBlock(fmt.Sprintf("t%d", r.IntN(5)), "Bash", []byte(`{}`)))))
			case 1:
				msgs = append(msgs, NewMessage(RoleUser, BlockList(ToolResultBlock(id, Text("out"), false), ToolResultBlock(fmt.Sprintf("t%d", r.IntN(5)), Text("out"), false))))
			case 2:
				m := NewMessage(RoleAssistant, Text(""))
				m.ToolCalls = []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "Bash", Arguments: "{}"}}}
				msgs = append(msgs, m)
			case 3:
				m := NewMessage(RoleTool, Text("out"))
				m.ToolCallID = id
				msgs = append(msgs, m)
			default:
				msgs = append(msgs, NewMessage(RoleUser, Text("go on")))
			}
		}
		want := func(i int, id string) int {
			for j := i - 1; j >= 0; j-- {
				if msgs[j].HoldsToolCall(id) {
					return j
				}
			}
			return -1
		}
		for res := range ToolResults(msgs) {
			if w := want(res.Message, res.ID); res.Turn != w {
				t.Fatalf("trial %d: ToolResults: result %s in message %d has Turn %d, want %d", trial, res.ID, res.Message, res.Turn, w)
			}
		}
		MapToolResults(msgs, func(res ToolResult) (Content, bool) {
			if w := want(res.Message, res.ID); res.Turn != w {
				t.Fatalf("trial %d: MapToolResults: result %s in message %d has Turn %d, want %d", trial, res.ID, res.Message, res.Turn, w)
			}
			return Content{}, false
		})
	}
}
