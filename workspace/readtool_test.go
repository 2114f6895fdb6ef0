package workspace_test

import (
	"testing"

	"github.com/agentctx/agentctx/workspace"
)

// The read-back tools are known by the names the clients give MCP tools:
// bare, Claude Code's mcp__<server>__<tool>, Gemini CLI's
// mcp_<server>_<tool>.
func TestIsReadToolNames(t *testing.T) {
	for name, want := range map[string]bool{
		"get_knowledge_by_id":                 true,
		"mcp__agentctx__get_knowledge_by_id":  true,
		"mcp_agentctx_get_knowledge_by_id":    true,
		"mcp_my_server_grep_knowledge":        true,
		"query_artifacts":                     true,
		"my_get_knowledge_by_id":              false,
		"mcp_agentctx_get_knowledge_by_id_v2": false,
		"run_shell_command":                   false,
		"mcp_agentctx_run_shell_command":      false,
	} {
		if got := workspace.IsReadTool(name); got != want {
			t.Errorf("IsReadTool(%q) = %v, want %v", name, got, want)
		}
	}
}
