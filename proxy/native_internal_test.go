package proxy

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
)

func TestClearEditAppendsAfterTheClients(t *testing.T) {
	use := func(id, name string) agentctx.Message {
		return agentctx.Message{Role: agentctx.RoleAssistant, Content: agentctx.BlockList(agentctx.ToolUseBlock(id, name, nil))}
	}
	msgs := []agentctx.Message{use("a", "Bash"), use("r", "ws_get"), use("b", "Bash"), use("c", "Bash"), use("d", "Bash")}
	edit := ctxedit.ClearEdit(msgs, map[string]bool{"a": true, "b": true, "d": true})
	want := `{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1},"keep":{"type":"tool_uses","value":2},"exclude_tools":["ws_get"]}`
	if string(edit) != want {
		t.Errorf("edit = %s\nwant   %s", edit, want)
	}
	got := ctxedit.WithEdit([]byte(`{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}`), edit)
	if w := `{"edits":[{"type":"clear_thinking_20251015","keep":"all"},` + want + `]}`; string(got) != w {
		t.Errorf("withEdit = %s", got)
	}
	if got := ctxedit.AppendMember([]byte(`{"a":1}`), "context_management", []byte(`{}`)); string(got) != `{"a":1,"context_management":{}}` {
		t.Errorf("appendMember = %s", got)
	}
}
