package pipeline

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/workspace"
)

// minPointerChars is the least stored content of a result sent whole that
// gets a pointer in a summary: a pointer line (its tool, input, artifact id
// and path) costs about 70 tokens, under a tenth of such a result. A
// shorter one is left to the summary's own line about the call and to the
// archive. Pruned and offloaded results always get one, and so do those
// that name a saved file (namesSaved).
const minPointerChars = 4_000

// resultPointers returns the pointers of the stored results of
// view[h:t], for the summary that replaces them (compact.Options.Pointers):
// every result that was pruned or offloaded, every one that names a saved
// file (namesSaved: a client's file, or something agentctx stored),
// whatever its size, and every other one the workspace keeps whole with
// at least minPointerChars characters (the summary drops their text too);
// the file a client saved output to gets a line of its own from compact,
// which finds it in the summarized results. Each has its artifact id, the
// absolute path of the artifact's content file when the store keeps files
// (workspace.Pather), and the size of what is stored. The positions are
// those of the view the store step keyed (c.results); the results before the
// live part (the kept head, an earlier summary) have none, and an earlier
// summary's pointers are carried by compact itself.
func (c *call) resultPointers(ctx context.Context, view []agentctx.Message, h, t int) []compact.Pointer {
	if c.p.ws == nil {
		return nil
	}
	store, ns := c.p.ws.Store(), c.p.ws.Namespace()
	ctx, cancel := c.p.storeCtx(ctx) // one bound for the sizes of the range
	defer cancel()
	var out []compact.Pointer
	for r := range agentctx.ToolResults(view[h:t]) {
		rs := c.results.state([2]int{h + r.Message, r.Block})
		if rs == nil || rs.Artifact == "" {
			continue
		}
		p := compact.Pointer{Kind: compact.PointerResult, ArtifactID: rs.Artifact, Path: artifactPath(store, ns, rs.Artifact),
			ToolCallID: r.ID, ToolName: c.callOf(r.ID).Name}
		info, err := store.Stat(ctx, ns, rs.Artifact)
		if err == nil {
			p.Chars, p.Lines = info.Chars, info.Lines
		}
		replaced := rs.Action == actionPruned || rs.Action == actionOffloaded
		if replaced || c.namesSaved(r, h) || err == nil && info.Chars >= minPointerChars {
			out = append(out, p)
		}
	}
	return out
}

// namesSaved reports whether the result r of view[h:] (at the position the
// store step keyed) names a saved file: one the client saved output to
// (workspace.SavedPaths), or something agentctx stored (namesStored), read
// in the result as the request sent it (c.src: a pruned preview no longer
// names its file). Such a result gets a pointer in a summary whatever its
// size (issue 47: Claude Code's 2,338-character preview naming its file
// was under minPointerChars and left out); the client's file itself gets
// a line of its own from compact (its pointers of a client's saved files).
func (c *call) namesSaved(r agentctx.ToolResult, h int) bool {
	content := r.Content
	if m := h + r.Message; m < len(c.src) && resultID(c.src[m], r.Block) == r.ID {
		content = resultContent(c.src, m, r.Block)
	}
	return len(workspace.SavedPaths(content)) > 0 || c.namesStored(content)
}

// namesStored reports whether a result's content names something
// agentctx stored: a reference, a read-back call on an artifact, or a file
// under the workspace's directory.
func (c *call) namesStored(content agentctx.Content) bool {
	names := func(s string) bool {
		return strings.Contains(s, "<knowledge_list>") || strings.Contains(s, workspace.ToolGetKnowledgeByID+"(artifact_id=") ||
			c.p.wsRoot != "" && strings.Contains(s, c.p.wsRoot+string(filepath.Separator))
	}
	switch content.Kind() {
	case agentctx.ContentText:
		return names(content.Text())
	case agentctx.ContentBlocks:
		for _, b := range content.Blocks() {
			if b.Type == agentctx.BlockText && names(b.Text) {
				return true
			}
		}
	}
	return false
}

// artifactPath returns the absolute path of an artifact's content file, or
// "" when the store keeps no files.
func artifactPath(store workspace.Store, ns, id string) string {
	pather, ok := store.(workspace.Pather)
	if !ok {
		return ""
	}
	path, err := pather.Path(ns, id)
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}

// resultID returns the id of the call the tool result at block b of m
// answers (b -1: a role "tool" message), "" when there is none.
func resultID(m agentctx.Message, b int) string {
	if b < 0 {
		return m.ToolCallID
	}
	if bl := m.Content.Blocks(); b < len(bl) && bl[b].Type == agentctx.BlockToolResult {
		return bl[b].ToolUseID
	}
	return ""
}
