package compact

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentctx/agentctx"
)

// TestPairedCut moves a tail that would begin with a result whose call is
// before it back to the call, wherever the call is, and no further than
// h; a tail beginning with a result of no earlier call stays.
func TestPairedCut(t *testing.T) {
	const raw = `[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Bash","input":{}},{"type":"tool_use","id":"c","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"2"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"3"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"d","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"d","content":"4"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"none","content":"5"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"6"}]},
		{"role":"assistant","content":"done"}
	]`
	var msgs []agentctx.Message
	if err := json.Unmarshal([]byte(raw), &msgs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ h, t, want int }{
		{0, 2, 1},   // the call right before
		{0, 5, 3},   // the call two messages back, past a result of the same turn
		{0, 4, 3},   // the call right before
		{4, 5, 4},   // not below h
		{0, 7, 6},   // an OpenAI tool message
		{0, 8, 8},   // a result of no call
		{0, 9, 8},   // a call long before: back past it, to a result of no call
		{0, 10, 10}, // not a result
		{3, 3, 3},   // an empty middle
	} {
		if got := pairedCut(msgs, tc.h, tc.t); got != tc.want {
			t.Errorf("pairedCut(h=%d, t=%d) = %d, want %d", tc.h, tc.t, got, tc.want)
		}
	}
}

// TestPairedCutMapsNoCalls: a tail that begins with the result of the
// call right before it is cut without mapping the history's calls (3.3 MB
// for 50,000 calls; issue 24, item 7).
func TestPairedCutMapsNoCalls(t *testing.T) {
	var msgs []agentctx.Message
	for i := range 10_000 {
		id := fmt.Sprint("toolu_", i)
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Bash", nil))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("ok"), false))))
	}
	var got int
	// AllocsPerRun, not memtest.AllocatedBy: what another goroutine of the
	// test binary allocates meanwhile is averaged away (CI once counted
	// 5,576 bytes of it).
	if n := testing.AllocsPerRun(20, func() { got = pairedCut(msgs, 0, len(msgs)-1) }); n > 0 {
		t.Errorf("pairedCut allocates %.0f times", n)
	}
	if got != len(msgs)-2 {
		t.Errorf("pairedCut = %d, want %d", got, len(msgs)-2)
	}
}
