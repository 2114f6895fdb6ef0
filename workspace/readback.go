package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
)

// InlineChars returns the size the inline limit is measured on: the
// characters (Unicode code points) of the text a model reads in a tool
// result. For string content that is the string; for a list of blocks it
// is the text of each text block, the blocks joined by one newline (the
// form an artifact stores them in), plus the compact JSON of every other
// block (an image, a document, an unknown type), which the model receives
// as data rather than text. Absent content measures 0.
//
// This differs from agentctx.Content.Chars, the seeds' measure for block
// content (its whole JSON, quotes and escapes included): a 39,840-character
// page returned in a text block (as SDKs return tool results) measures
// 39,840 here, not the 40,000 and more of its JSON.
func InlineChars(c agentctx.Content) int {
	if c.Kind() != agentctx.ContentBlocks {
		if c.IsText() {
			return utf8.RuneCountInString(c.Text())
		}
		return c.Chars()
	}
	n := 0
	for i, b := range c.Blocks() {
		if i > 0 {
			n++ // the newline that joins the blocks
		}
		if b.Type == agentctx.BlockText {
			n += utf8.RuneCountInString(b.Text)
			continue
		}
		n += agentctx.BlockList(b).Chars() - 2 // the block, without the list's brackets
	}
	return n
}

// ReadTools returns the names of the workspace's read-back tools (see
// Tools).
func ReadTools() []string { return toolNames() }

// IsReadTool reports whether name is one of the workspace's read-back
// tools, as an agent names it: the bare name (get_knowledge_by_id) or the
// name an MCP client gives a server's tool, with a "<prefix>__" before it
// (Claude Code's mcp__agentctx__get_knowledge_by_id) or "mcp_<server>_"
// (Gemini CLI's mcp_agentctx_get_knowledge_by_id).
func IsReadTool(name string) bool {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:]
	}
	for _, t := range toolNames() {
		if name == t || strings.HasPrefix(name, "mcp_") && strings.HasSuffix(name, "_"+t) {
			return true
		}
	}
	return false
}

// ReadsBack reports whether a tool call reads the workspace's own stored
// content back: it calls one of the read-back tools (IsReadTool), or its
// input names a file under the directory the store keeps its data in (an
// agent's own file or shell tool reading an artifact's content file, whose
// path a reference gave it), or the caller set call.ReadsSaved (it reads
// a file the client saved output to). The result of such a call is stored like any
// other, but never replaced by a reference: replacing a read of stored
// content with a reference to that content would leave the agent no way to
// read it (see OffloadToolResult).
func (w *Workspace) ReadsBack(call ToolCall) bool {
	if call.ReadsSaved || IsReadTool(call.Name) {
		return true
	}
	root := w.root()
	if root == "" || len(call.Input) == 0 {
		return false
	}
	if bytes.Contains(call.Input, []byte(root)) {
		return true
	}
	if bytes.IndexByte(call.Input, '\\') < 0 {
		return false // no escapes: the bytes say it all
	}
	// The path may be written with JSON escapes (\/, \u00e9): look in the
	// decoded strings too.
	var v any
	if json.Unmarshal(call.Input, &v) != nil {
		return false
	}
	return containsString(v, root)
}

func containsString(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if containsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}

// root returns the absolute directory the store keeps its files in, "" when
// it keeps none a file tool can read (a database, memory).
func (w *Workspace) root() string {
	if _, ok := w.store.(Pather); !ok {
		return ""
	}
	l, ok := w.store.(Locator)
	if !ok {
		return ""
	}
	loc := l.Location()
	if loc == "" || strings.Contains(loc, "://") {
		return ""
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	if loc == string(filepath.Separator) {
		return "" // every path would match
	}
	return loc + string(filepath.Separator)
}

// Reference returns the <knowledge_list> entry that stands for a stored
// artifact in the context, as OffloadToolResult writes it for a result of
// the inline limit or more: for a caller that replaces a result it kept
// whole before (a cold prompt cache makes that free).
func (w *Workspace) Reference(ctx context.Context, id string) (string, error) {
	a, err := w.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return w.knowledgeList(a.Info, a.Content), nil
}
