package proxy

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/workspace"
)

// Marks counts what agentctx's edits leave in a recorded conversation:
// the marks that tell a transcript of a session that ran through agentctx
// (whose recorded usage is that of the edited requests, not of the
// history the transcript holds) from one that did not.
type Marks struct {
	// References counts tool results replaced by a reference (a workspace
	// <knowledge_list> entry, an offload file reference) or cleared (the
	// placeholder of a stale result).
	References int `json:"references"`
	// Summaries counts compaction summaries and texts that quote their
	// list of stored originals (compact.PointersTitle).
	Summaries int `json:"summaries"`
	// ReadBacks counts the agent's calls of the workspace's read tools
	// (get_knowledge_by_id and the others, under any MCP prefix) and the
	// reads of a stored result's file (tool_result_<id>.txt in an agentctx
	// workspace).
	ReadBacks int `json:"read_backs"`
}

// Any reports whether m holds a mark.
func (m Marks) Any() bool { return m.References+m.Summaries+m.ReadBacks > 0 }

// String names the marks found, "" for none: "3 references, 1 summary".
func (m Marks) String() string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(m.References, "reference", "references")
	add(m.Summaries, "summary", "summaries")
	add(m.ReadBacks, "read-back", "read-backs")
	return strings.Join(parts, ", ")
}

// readTools are the workspace's read tools, whose calls are read-backs.
var readTools = []string{workspace.ToolGetKnowledgeByID, workspace.ToolGetKnowledgeByLines, workspace.ToolGrepKnowledge,
	workspace.ToolGrepSessionKnowledge, workspace.ToolQueryArtifacts, workspace.ToolGetToolResultOffloadInfo}

// FindMarks counts agentctx's marks in msgs (see Marks).
func FindMarks(msgs []agentctx.Message) Marks {
	var m Marks
	for r := range agentctx.ToolResults(msgs) {
		if isMarkedResult(r.Content.AsText()) {
			m.References++
		}
	}
	for u := range agentctx.ToolUses(msgs) {
		if isReadBack(u.Name, string(u.Input)) {
			m.ReadBacks++
		}
	}
	for _, msg := range msgs {
		if compact.IsSummary(msg) {
			m.Summaries++
			continue
		}
		if strings.Contains(textOf(msg), "## "+compact.PointersTitle+"\n") {
			m.Summaries++
		}
	}
	return m
}

// isMarkedResult reports whether a tool result's text is agentctx's: a
// reference or a placeholder (isReference), or a live clearing's
// placeholder, which names the stored original.
func isMarkedResult(text string) bool {
	t := strings.TrimSpace(text)
	return isReference(t) || strings.Contains(t, "\n[Stored whole: "+workspace.ToolGetKnowledgeByID+"(")
}

// isReadBack reports whether a tool call reads agentctx's workspace back.
func isReadBack(name, input string) bool {
	for _, n := range readTools {
		if name == n || strings.HasSuffix(name, "__"+n) || strings.HasPrefix(name, "mcp_") && strings.HasSuffix(name, "_"+n) { // Gemini CLI's mcp_<server>_<tool>
			return true
		}
	}
	i := strings.Index(input, "tool_result_")
	return i >= 0 && strings.Contains(input[i:], ".txt") &&
		(strings.Contains(input, "/.agentctx/") || strings.Contains(input, "/agentctx/projects/") ||
			strings.Contains(input, `\.agentctx\`) || strings.Contains(input, `\agentctx\projects\`))
}

// textOf is the text of a message's string content and text blocks.
func textOf(m agentctx.Message) string {
	if m.Content.IsText() {
		return m.Content.Text()
	}
	var b strings.Builder
	for _, bl := range m.Content.Blocks() {
		if bl.Type == agentctx.BlockText {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
