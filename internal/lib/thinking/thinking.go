// Package thinking holds the rules of Anthropic's signed thinking that the
// proxy and the SDK middleware (anthropicx) share: which blocks are
// thinking, which turn is open, which prefix of a request the open turn's
// thinking is bound to (Bound, for pipeline.CallOptions), and which
// thinking of ended turns an edit invalidated and must be removed (Fix).
//
// Anthropic's preserved thinking accepts a thinking or redacted_thinking
// block only after the very system, tools and messages it was produced
// after ("prefix checks"); otherwise the request is rejected (400) or,
// with thinking.block_binding.prefix_mismatch_behavior "drop_block", the
// block and every later one are dropped. While thinking is on, the last
// assistant message of an open tool loop must start with its thinking, so
// that message binds every message before it: an edit there cannot be
// sent. The thinking of ended turns may be removed instead (the documented
// way to keep them after trimming or summarizing).
package thinking

import "github.com/agentctx/agentctx"

// IsBlock reports whether b is a thinking or redacted_thinking block.
func IsBlock(b agentctx.Block) bool {
	return b.Type == agentctx.BlockThinking || b.Type == agentctx.BlockRedactedThinking
}

// Has reports whether m is an assistant message with a thinking block.
func Has(m *agentctx.Message) bool {
	if m.Role != agentctx.RoleAssistant {
		return false
	}
	for _, b := range m.Content.Blocks() {
		if IsBlock(b) {
			return true
		}
	}
	return false
}

// OnlyToolResults reports whether m is a user message of tool_result
// blocks only.
func OnlyToolResults(m *agentctx.Message) bool {
	bl := m.Content.Blocks()
	if m.Role != agentctx.RoleUser || len(bl) == 0 {
		return false
	}
	for _, b := range bl {
		if b.Type != agentctx.BlockToolResult {
			return false
		}
	}
	return true
}

// OpenTurn returns the index of the assistant message whose turn is still
// open (followed only by messages of tool results), or -1.
func OpenTurn(msgs []agentctx.Message) int {
	for j := len(msgs) - 1; j >= 0; j-- {
		m := &msgs[j]
		if m.Role == agentctx.RoleAssistant {
			if j == len(msgs)-1 {
				return -1
			}
			return j
		}
		if !OnlyToolResults(m) {
			return -1
		}
	}
	return -1
}

// Bound returns the number of leading messages of a request with thinking
// on that the open turn's thinking is bound to: the index of the open
// turn's last assistant message when it holds thinking, else 0 (no open
// turn, or one without thinking). No message before it may change, except
// by a compaction that leaves no thinking block after the change (see
// pipeline.CallOptions).
func Bound(msgs []agentctx.Message) int {
	o := OpenTurn(msgs)
	if o < 0 || !Has(&msgs[o]) {
		return 0
	}
	return o
}
