package pipeline

import (
	"context"
	"path/filepath"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/workspace"
)

// minPointerChars is the least stored content of a result sent whole that
// gets a pointer in a summary: a pointer line (its tool, input, artifact id
// and path) costs about 70 tokens, under a tenth of such a result. A
// shorter one is left to the summary's own line about the call and to the
// archive. Pruned and offloaded results always get one.
const minPointerChars = 4_000

// resultPointers returns the pointers of the stored results of
// view[h:t], for the summary that replaces them (compact.Options.Pointers):
// every result that was pruned or offloaded, and every other one the
// workspace keeps whole with at least minPointerChars characters (the
// summary drops their text too). Each has its artifact id, the absolute
// path of the artifact's content file when the store keeps files
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
		if !replaced && (err != nil || info.Chars < minPointerChars) {
			continue
		}
		out = append(out, p)
	}
	return out
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
