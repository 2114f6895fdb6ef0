package workspace

// Metadata keys that agentctx writes on every offloaded tool result
// (SPEC §5). Queries match them, and any other key, exactly.
const (
	KeyContextType = "context_type" // always ContextToolResult for offloaded tool results
	KeyBizID       = "biz_id"       // the tool call id
	KeyAgentID     = "agent_id"
	KeyTaskID      = "task_id"
	KeySessionID   = "session_id"
	KeyToolName    = "tool_name"
	KeyActionName  = "action_name"
)

// ContextToolResult is the context_type of an offloaded tool result.
const ContextToolResult = "tool_result"

// ArtifactIDPrefix is the prefix of a tool result's artifact id: the
// artifact of tool call "toolu_01" is "tool_result_toolu_01".
const ArtifactIDPrefix = "tool_result_"

// ArtifactID returns the artifact id of a tool call's result.
func ArtifactID(toolCallID string) string { return ArtifactIDPrefix + toolCallID }
