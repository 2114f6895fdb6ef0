package workspace

import (
	"encoding/json"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/clientsaved"
)

// SavedPaths returns the absolute paths of the files that a tool result
// says the client saved output to: the preview a client shows for a long
// output it keeps in a file of its own (Claude Code's and Qwen Code's
// "Output too large (…). Full output saved to: /…", opencode's and Kilo's
// "The tool call succeeded but the output was truncated. Full output saved
// to: /…", Qwen Code's "The full output has been saved to: /…"), in order,
// each once; nil when it names none. A result that merely mentions a path,
// or a tool's own "report saved to /…", names none. Only the first and
// last 8 KiB of each text are read; a result that is one JSON string is
// read as its text.
func SavedPaths(c agentctx.Content) []string {
	var out []string
	switch c.Kind() {
	case agentctx.ContentText:
		out = clientsaved.Append(out, c.Text())
	case agentctx.ContentBlocks:
		for _, b := range c.Blocks() {
			if b.Type == agentctx.BlockText {
				out = clientsaved.Append(out, b.Text)
			}
		}
	}
	return out
}

// NamesSavedPath reports whether a tool call's input names one of paths
// (SavedPaths of earlier results): the call reads a file the client saved
// output to, and its result is kept whole like a read of the workspace
// (ToolCall.ReadsSaved). The path is looked for as a whole name, as it is
// and as JSON writes it in a string (a Windows path's backslashes
// doubled).
func NamesSavedPath(input json.RawMessage, paths []string) bool {
	return clientsaved.Named(input, paths)
}
