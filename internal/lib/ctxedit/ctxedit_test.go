package ctxedit

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

func TestMembers(t *testing.T) {
	if got := string(rawjson.Set([]byte(`{"a":1,"b":2}`), "b", []byte(`3`))); got != `{"a":1,"b":3}` {
		t.Errorf("SetMember replace = %s", got)
	}
	if got := string(rawjson.Set([]byte(`{}`), "c", []byte(`[]`))); got != `{"c":[]}` {
		t.Errorf("SetMember add = %s", got)
	}
	if got := string(rawjson.Get([]byte(`{"edits":[1]}`), "edits")); got != `[1]` {
		t.Errorf("Member = %s", got)
	}
	if got := string(WithEdit(nil, []byte(`{"type":"x"}`))); got != `{"edits":[{"type":"x"}]}` {
		t.Errorf("WithEdit(nil) = %s", got)
	}
}

// TestSameBlock: blocks that differ only by their breakpoint are the same;
// a cleared result is not.
func TestSameBlock(t *testing.T) {
	dec := func(js string) agentctx.Block {
		m, err := agentctx.DecodeMessage([]byte(`{"role":"user","content":[` + js + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return m.Content.Blocks()[0]
	}
	a := dec(`{"type":"tool_result","tool_use_id":"t","content":"out"}`)
	b := dec(`{"type":"tool_result","tool_use_id":"t","content":"out","cache_control":{"type":"ephemeral"}}`)
	c := dec(`{"type":"tool_result","tool_use_id":"t","content":"[cleared]"}`)
	if !SameBlock(a, b) || SameBlock(a, c) {
		t.Errorf("SameBlock: breakpoint %v, cleared %v", SameBlock(a, b), SameBlock(a, c))
	}
}
