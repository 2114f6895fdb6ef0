package pipeline

import (
	"reflect"
	"testing"

	"github.com/agentctx/agentctx"
)

// mapToolResults makes no copy of a list in which it replaces nothing
// (issue 24: three such passes copied the 100,000 messages of a 10 MB
// request), and otherwise makes MapToolResults' list, calling fn once per
// result as MapToolResults does.
func TestMapToolResultsSharesAnUnchangedList(t *testing.T) {
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("go")),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("a", "Bash", nil), agentctx.ToolUseBlock("b", "Bash", nil))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(
			agentctx.ToolResultBlock("a", agentctx.Text("out a"), false),
			agentctx.ToolResultBlock("b", agentctx.Text("out b"), false))),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("c", "Bash", nil))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("c", agentctx.Text("out c"), false))),
	}
	out, changed := mapToolResults(msgs, func(agentctx.ToolResult) (agentctx.Content, bool) { return agentctx.Content{}, false })
	if &out[0] != &msgs[0] || len(out) != len(msgs) || changed != nil {
		t.Errorf("nothing replaced: got a copy (%v) or changes %v", &out[0] != &msgs[0], changed)
	}
	for _, pick := range []map[string]bool{{"a": true}, {"b": true}, {"a": true, "b": true, "c": true}, {"c": true}} {
		fn := func(seen *[]agentctx.ToolResult) func(agentctx.ToolResult) (agentctx.Content, bool) {
			return func(r agentctx.ToolResult) (agentctx.Content, bool) {
				*seen = append(*seen, r)
				return agentctx.Text("cleared " + r.ID), pick[r.ID]
			}
		}
		var seenGot, seenWant []agentctx.ToolResult
		got, changed := mapToolResults(msgs, fn(&seenGot))
		want := agentctx.MapToolResults(msgs, fn(&seenWant))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: list differs from MapToolResults'", pick)
		}
		if !reflect.DeepEqual(seenGot, seenWant) {
			t.Errorf("%v: fn saw %v, MapToolResults' %v", pick, seenGot, seenWant)
		}
		var wantChanged []int
		for i := range msgs {
			if !reflect.DeepEqual(got[i], msgs[i]) {
				wantChanged = append(wantChanged, i)
			}
		}
		if !reflect.DeepEqual(changed, wantChanged) {
			t.Errorf("%v: changed %v, want %v", pick, changed, wantChanged)
		}
		if &got[0] == &msgs[0] {
			t.Errorf("%v: the input list itself returned with changes", pick)
		}
	}
}
