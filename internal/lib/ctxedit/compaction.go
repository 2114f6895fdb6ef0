package ctxedit

import (
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Native compaction (see proxy's native.go): when agentctx decides to
// compact an Anthropic request in native mode, the request goes as last
// sent with a compact_20260112 edit whose trigger the request reaches and
// whose instructions carry agentctx's "## Stored originals" pointers; the
// API answers with a compaction block first, and on later requests drops
// every block before it. Every later request declares the edit (a request
// that carries a compaction block must), with a trigger it does not reach:
// agentctx, not the server, decides the next compaction.
const (
	// CompactBeta is the beta threshold compaction needs, Compact its edit.
	CompactBeta = "compact-2026-01-12"
	Compact     = "compact_20260112"
	// MinCompactTrigger is the smallest trigger the API accepts: a
	// request under it is compacted client-side.
	MinCompactTrigger = 50_000
	// DeclaredTrigger is the trigger of the edit declared on the requests
	// that follow a compaction: beyond any window agentctx lets a request
	// reach, so the server does not compact on its own.
	DeclaredTrigger = 10_000_000
	// BlockType is the type of a compaction block.
	BlockType = "compaction"
)

// CompactEdit returns the compact_20260112 edit with its trigger and, when
// not empty, its instructions.
func CompactEdit(trigger int, instructions string) []byte {
	buf := []byte(`{"type":"` + Compact + `","trigger":{"type":"input_tokens","value":`)
	buf = appendInt(buf, trigger)
	buf = append(buf, '}')
	if instructions != "" {
		buf = append(buf, `,"instructions":`...)
		buf = rawjson.AppendString(buf, instructions)
	}
	return append(buf, '}')
}

// CompactionIndex returns the index of the last message holding a
// compaction block, or -1: the API drops every block before it.
func CompactionIndex(msgs []agentctx.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != agentctx.RoleAssistant {
			continue
		}
		for _, b := range msgs[i].Content.Blocks() {
			if b.Type == BlockType {
				return i
			}
		}
	}
	return -1
}

// Emptied reports whether a compaction block lost what the API sent:
// Claude Code (2.1.330) sends it back as {"type":"compaction","content":""},
// without encrypted_content, its stream handling skipping compaction_delta.
func Emptied(b agentctx.Block) bool {
	if b.Type != BlockType {
		return false
	}
	if _, ok := b.Field("encrypted_content"); ok {
		return false
	}
	c, ok := b.Field("content")
	return !ok || rawjson.Kind(c) == 'n' || string(c) == `""`
}

// Restore returns m with its emptied compaction blocks (Emptied) replaced
// by block, the block as the API sent it, and whether it replaced one.
func Restore(m agentctx.Message, block []byte) (agentctx.Message, bool) {
	if len(block) == 0 {
		return m, false
	}
	var nb agentctx.Block
	if err := nb.UnmarshalJSON(block); err != nil || nb.Type != BlockType {
		return m, false
	}
	done := false
	for i, b := range m.Content.Blocks() {
		if Emptied(b) {
			m = m.WithBlock(i, nb)
			done = true
		}
	}
	return m, done
}

// Instructions returns the instructions of a native compaction: agentctx's
// summary prompt, then the "## Stored originals" section of summary (the
// summary agentctx made of the same messages, client-side) with the prompt
// that asks to keep it verbatim, so the read tools still reach what the
// provider's summary replaces. Without such a section, the prompt alone.
func Instructions(summary string) string {
	var b strings.Builder
	b.WriteString(compact.SummaryPrompt)
	if i := strings.Index(summary, "## "+compact.PointersTitle); i >= 0 {
		b.WriteString("\n\n")
		b.WriteString(compact.PointersPrompt)
		b.WriteString("\n\n")
		b.WriteString(strings.TrimSpace(summary[i:]))
	}
	return b.String()
}

// Uncompacted returns the messages a request asking the API to compact
// sends: the messages the session's last request sent, in their places
// (every edit placed then stays, so no thinking block after them is
// invalidated), then the client's newer ones. It returns nil when the last
// request's messages are not in the client's places (a client-side
// compaction, another history): the compaction then stays client-side.
func Uncompacted(in, last []agentctx.Message) []agentctx.Message {
	if len(last) == 0 || len(last) > len(in) {
		return nil
	}
	for j := range last {
		if last[j].Role != in[j].Role || !EqualStrings(callIDs(&last[j]), callIDs(&in[j])) {
			return nil
		}
	}
	out := make([]agentctx.Message, 0, len(in))
	out = append(out, AsSent(in[:len(last)], last)...)
	return append(out, in[len(last):]...)
}

// AsSent returns the messages sent (as a request sent them, in the
// client's places in), each as the client has it when they are the same
// but for breakpoints, else as sent without its breakpoints: the client's
// have moved on since, and there are at most four. sent is at most as
// long as in.
func AsSent(in, sent []agentctx.Message) []agentctx.Message {
	out := make([]agentctx.Message, len(sent))
	for j := range sent {
		if sameMessage(&sent[j], &in[j]) {
			out[j] = in[j] // the client's own, its breakpoints with it
		} else {
			out[j] = withoutBreakpoints(sent[j])
		}
	}
	return out
}

// sameMessage reports whether two messages are the same but for their
// breakpoints.
func sameMessage(x, y *agentctx.Message) bool {
	if x.Role != y.Role || x.Content.IsText() != y.Content.IsText() {
		return false
	}
	if x.Content.IsText() {
		return x.Content.Text() == y.Content.Text()
	}
	bx, by := x.Content.Blocks(), y.Content.Blocks()
	if len(bx) != len(by) {
		return false
	}
	for i := range bx {
		if !SameBlock(bx[i], by[i]) {
			return false
		}
	}
	return true
}

// withoutBreakpoints returns m without the cache_control of its blocks.
func withoutBreakpoints(m agentctx.Message) agentctx.Message {
	for i, b := range m.Content.Blocks() {
		if _, ok := b.Field("cache_control"); !ok {
			continue
		}
		raw, err := b.MarshalJSON()
		if err != nil {
			continue
		}
		var nb agentctx.Block
		if nb.UnmarshalJSON(withoutBreakpoint(raw)) == nil {
			m = m.WithBlock(i, nb)
		}
	}
	return m
}

// callIDs returns the ids of a message's tool_use blocks and the
// tool_use_id of its tool_result blocks, in order.
func callIDs(m *agentctx.Message) []string {
	var ids []string
	for _, b := range m.Content.Blocks() {
		switch b.Type {
		case agentctx.BlockToolUse:
			ids = append(ids, b.ID)
		case agentctx.BlockToolResult:
			ids = append(ids, b.ToolUseID)
		}
	}
	return ids
}
