package agentctx

import (
	"encoding/json"
	"iter"
)

// ToolUse is one tool call found in a message list: an Anthropic tool_use
// block or an element of an OpenAI assistant message's tool_calls.
type ToolUse struct {
	Message int    // index of the message in the list
	Index   int    // index of the block, or of the element of tool_calls
	OpenAI  bool   // true for a tool_calls element
	ID      string // tool_use id / tool call id
	Name    string // tool name
	// Input is the call's arguments as JSON: the tool_use input as given, or
	// the bytes of an OpenAI function's arguments string.
	Input json.RawMessage
}

// ToolResult is one tool result found in a message list: a tool_result
// block, or a whole role "tool" message (Block is then -1 and ID is its
// tool_call_id). Every part of agentctx treats the two alike.
type ToolResult struct {
	Message int     // index of the message in the list
	Block   int     // index of the tool_result block, or -1 for a role "tool" message
	ID      string  // the id of the call it answers
	Content Content // the result's content
	IsError bool    // the block's is_error (always false for role "tool" messages)
	// Turn is the index of the message holding the call the result answers:
	// the latest message before it with a call of this id, or -1 when none
	// has. Models may reuse an id in several turns: (Turn, ID) tells their
	// results apart.
	Turn int
}

// IsMessage reports whether the result is a whole role "tool" message.
func (r ToolResult) IsMessage() bool { return r.Block < 0 }

// ToolUses yields every tool call in msgs, oldest first, blocks in order.
func ToolUses(msgs []Message) iter.Seq[ToolUse] {
	return func(yield func(ToolUse) bool) {
		for i := range msgs {
			m := &msgs[i]
			for j := range m.Content.blocks {
				b := &m.Content.blocks[j]
				if b.Type == BlockToolUse {
					if !yield(ToolUse{Message: i, Index: j, ID: b.ID, Name: b.Name, Input: b.Input}) {
						return
					}
				}
			}
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				if !yield(ToolUse{Message: i, Index: j, OpenAI: true, ID: tc.ID, Name: tc.Function.Name,
					Input: json.RawMessage(tc.Function.Arguments)}) {
					return
				}
			}
		}
	}
}

// ToolResults yields every tool result in msgs, oldest first, blocks in
// order.
func ToolResults(msgs []Message) iter.Seq[ToolResult] {
	return func(yield func(ToolResult) bool) {
		turns := turnTracker{msgs: msgs}
		for i := range msgs {
			m := &msgs[i]
			if m.Role == RoleTool {
				if !yield(ToolResult{Message: i, Block: -1, ID: m.ToolCallID, Content: m.Content, Turn: turns.of(i, m.ToolCallID)}) {
					return
				}
				continue
			}
			for j := range m.Content.blocks {
				b := &m.Content.blocks[j]
				if b.Type == BlockToolResult {
					if !yield(ToolResult{Message: i, Block: j, ID: b.ToolUseID, Content: b.Content, IsError: b.IsError, Turn: turns.of(i, b.ToolUseID)}) {
						return
					}
				}
			}
		}
	}
}

// HoldsToolResult reports whether m answers a tool call: an OpenAI role
// "tool" message, or one holding tool_result blocks (the messages whose
// results ToolResults yields).
func (m Message) HoldsToolResult() bool {
	if m.Role == RoleTool {
		return true
	}
	for j := range m.Content.blocks {
		if m.Content.blocks[j].Type == BlockToolResult {
			return true
		}
	}
	return false
}

// turnTracker answers, for a result in message i of msgs, the latest
// message before i with a call of its id. It looks at the message right
// before first (where a result's call almost always is), and builds the
// map of every call id, from the messages before i, only when that fails:
// a list of many small turns is not mapped on every pass (issue 24).
type turnTracker struct {
	msgs []Message
	at   map[string]int
	upto int // the calls of msgs[:upto] are in at
}

func (t *turnTracker) of(i int, id string) int {
	if i > 0 && t.msgs[i-1].HoldsToolCall(id) {
		return i - 1
	}
	for ; t.upto < i; t.upto++ {
		t.see(t.upto, &t.msgs[t.upto])
	}
	if j, ok := t.at[id]; ok {
		return j
	}
	return -1
}

// HoldsToolCall reports whether m makes a tool call with the id: a
// tool_use block or an OpenAI tool_calls entry (the calls ToolUses
// yields).
func (m Message) HoldsToolCall(id string) bool {
	for j := range m.Content.blocks {
		if b := &m.Content.blocks[j]; b.Type == BlockToolUse && b.ID == id {
			return true
		}
	}
	for j := range m.ToolCalls {
		if m.ToolCalls[j].ID == id {
			return true
		}
	}
	return false
}

func (t *turnTracker) see(i int, m *Message) {
	for j := range m.Content.blocks {
		if b := &m.Content.blocks[j]; b.Type == BlockToolUse {
			t.set(b.ID, i)
		}
	}
	for j := range m.ToolCalls {
		t.set(m.ToolCalls[j].ID, i)
	}
}

func (t *turnTracker) set(id string, i int) {
	if t.at == nil {
		t.at = map[string]int{}
	}
	t.at[id] = i
}

// ToolNames maps each tool call id in msgs to its tool name.
func ToolNames(msgs []Message) map[string]string {
	names := make(map[string]string)
	for u := range ToolUses(msgs) {
		if _, dup := names[u.ID]; !dup {
			names[u.ID] = u.Name
		}
	}
	return names
}

// MapToolResults returns a new list in which the content of every tool
// result for which fn returns (content, true) is replaced. msgs is never
// modified: changed messages are copies (only the changed blocks are new),
// unchanged messages are shared.
func MapToolResults(msgs []Message, fn func(ToolResult) (Content, bool)) []Message {
	out := make([]Message, len(msgs))
	copy(out, msgs)
	turns := turnTracker{msgs: msgs}
	for i := range msgs {
		m := &msgs[i]
		if m.Role == RoleTool {
			if c, ok := fn(ToolResult{Message: i, Block: -1, ID: m.ToolCallID, Content: m.Content, Turn: turns.of(i, m.ToolCallID)}); ok {
				out[i] = m.WithContent(c)
			}
			continue
		}
		var blocks []Block
		for j := range m.Content.blocks {
			b := &m.Content.blocks[j]
			if b.Type != BlockToolResult {
				continue
			}
			c, ok := fn(ToolResult{Message: i, Block: j, ID: b.ToolUseID, Content: b.Content, IsError: b.IsError, Turn: turns.of(i, b.ToolUseID)})
			if !ok {
				continue
			}
			if blocks == nil {
				blocks = append([]Block(nil), m.Content.blocks...)
			}
			blocks[j].Content = c
		}
		if blocks != nil {
			out[i] = m.WithContent(Content{kind: ContentBlocks, blocks: blocks})
		}
	}
	return out
}
