package pipeline

import (
	"encoding/json"
	"slices"

	"github.com/agentctx/agentctx/workspace"
)

// maxSavedPaths bounds the client-saved files a session remembers
// (state.SavedPaths): the newest are kept.
const maxSavedPaths = 512

// noteSaved remembers the files a new result says the client saved output
// to (workspace.SavedPaths: Claude Code's, opencode's, Kilo's and Qwen
// Code's previews of a long output), so that a later read of one is kept
// whole (readsSaved).
func (c *call) noteSaved(paths []string) {
	var add []string
	for _, p := range paths {
		if !slices.Contains(c.st.SavedPaths, p) {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return
	}
	// A new slice: the state before this call shares the old one.
	all := slices.Concat(c.st.SavedPaths, add)
	if len(all) > maxSavedPaths {
		all = all[len(all)-maxSavedPaths:]
	}
	c.st.SavedPaths = all
}

// readsSaved reports whether a call with this input reads a file an
// earlier result said the client saved output to: the whole output the
// client took out of its context, read back on purpose, which a
// reference must not take out again (issue 47: one extra read per run).
func (c *call) readsSaved(input json.RawMessage) bool {
	return workspace.NamesSavedPath(input, c.st.SavedPaths)
}
