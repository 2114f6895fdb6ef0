// Package ctxedit holds what the proxy and the SDK middleware (anthropicx)
// share to delegate agentctx's clearing decisions to Anthropic's context
// editing (native mode, see proxy's native.go): the clear_tool_uses edit
// that has the server clear the results agentctx cleared, and the
// context_management object with it appended after the client's own edits.
package ctxedit

import (
	"bytes"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/thinking"
)

// Beta is the beta Anthropic's context editing needs, and ClearToolUses the
// edit agentctx appends.
const (
	Beta          = "context-management-2025-06-27"
	ClearToolUses = "clear_tool_uses_20250919"
)

// ToolResultIDs returns the tool_use_id of each tool_result of a message,
// in order; nil when it has a block of another kind.
func ToolResultIDs(m *agentctx.Message) []string {
	if !thinking.OnlyToolResults(m) {
		return nil
	}
	var ids []string
	for _, b := range m.Content.Blocks() {
		ids = append(ids, b.ToolUseID)
	}
	return ids
}

// SameBlock reports whether two blocks are the same but for their
// cache_control breakpoint.
func SameBlock(x, y agentctx.Block) bool {
	bx, err1 := x.MarshalJSON()
	by, err2 := y.MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(withoutBreakpoint(bx), withoutBreakpoint(by))
}

// withoutBreakpoint returns a block's JSON compact, without cache_control.
func withoutBreakpoint(raw []byte) []byte {
	ms, err := rawjson.Members(raw)
	if err != nil {
		return raw
	}
	buf := []byte{'{'}
	for _, m := range ms {
		if m.Key == "cache_control" {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, m.RawKey...)
		buf = append(buf, ':')
		buf = rawjson.AppendCanonical(buf, m.Value)
	}
	return append(buf, '}')
}

// EqualStrings reports whether two lists of strings are equal.
func EqualStrings(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// ClearEdit returns the clear_tool_uses_20250919 edit that has the server
// clear the tool results agentctx cleared (see the package notes on the
// approximation), or nil when it would clear nothing. cleared holds the
// ids of the tool calls whose results agentctx cleared, in the messages or
// held.
func ClearEdit(msgs []agentctx.Message, cleared map[string]bool) []byte {
	type use struct{ id, name string }
	var uses []use
	hit := map[string]bool{} // tool names with a cleared use
	for i := range msgs {
		if msgs[i].Role != agentctx.RoleAssistant {
			continue
		}
		for _, b := range msgs[i].Content.Blocks() {
			if b.Type == agentctx.BlockToolUse {
				uses = append(uses, use{b.ID, b.Name})
				if cleared[b.ID] {
					hit[b.Name] = true
				}
			}
		}
	}
	var exclude []string
	seen := map[string]bool{}
	cands, run := 0, 0
	inRun := true
	for _, u := range uses {
		if !hit[u.name] {
			if !seen[u.name] {
				seen[u.name] = true
				exclude = append(exclude, u.name)
			}
			continue
		}
		cands++
		if inRun && cleared[u.id] {
			run++
		} else {
			inRun = false
		}
	}
	if run == 0 {
		return nil
	}
	buf := []byte(`{"type":"` + ClearToolUses + `","trigger":{"type":"input_tokens","value":1},"keep":{"type":"tool_uses","value":`)
	buf = appendInt(buf, cands-run)
	buf = append(buf, '}')
	if len(exclude) > 0 {
		buf = append(buf, `,"exclude_tools":[`...)
		for i, n := range exclude {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = rawjson.AppendString(buf, n)
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// ClearedIDs returns the ids of the tool calls whose results the messages
// to send changed from the client's (a placeholder or a reference), plus
// held.
// same compares two blocks (nil: SameBlock).
func ClearedIDs(in, out []agentctx.Message, held []string, same func(x, y agentctx.Block) bool) map[string]bool {
	if same == nil {
		same = SameBlock
	}
	orig := map[string]agentctx.Block{}
	for i := range in {
		for _, b := range in[i].Content.Blocks() {
			if b.Type == agentctx.BlockToolResult {
				orig[b.ToolUseID] = b
			}
		}
	}
	ids := map[string]bool{}
	for _, id := range held {
		ids[id] = true
	}
	for i := range out {
		for _, b := range out[i].Content.Blocks() {
			if b.Type != agentctx.BlockToolResult {
				continue
			}
			if o, ok := orig[b.ToolUseID]; ok && !same(o, b) {
				ids[b.ToolUseID] = true
			}
		}
	}
	return ids
}

// WithEdit returns the context_management object with edits appended to
// its edits (created when absent): the client's own edits stay first.
func WithEdit(cm []byte, edits ...[]byte) []byte {
	if rawjson.Kind(cm) != '{' {
		cm = []byte(`{}`)
	}
	var list []byte
	list = append(list, '[')
	if old := rawjson.Get(cm, "edits"); rawjson.Kind(old) == '[' {
		els, err := rawjson.Elements(old)
		if err != nil {
			return cm
		}
		for _, e := range els {
			list = append(list, e...)
			list = append(list, ',')
		}
	}
	for _, e := range edits {
		list = append(list, e...)
		list = append(list, ',')
	}
	if len(list) == 1 {
		list = append(list, ']')
	} else {
		list[len(list)-1] = ']'
	}
	return rawjson.Set(cm, "edits", list)
}

// AppendMember returns the object raw with a member added before its
// closing brace.
func AppendMember(raw []byte, key string, value []byte) []byte {
	end := bytes.LastIndexByte(raw, '}')
	if end < 0 {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(key)+len(value)+4)
	out = append(out, raw[:end]...)
	if len(bytes.TrimSpace(raw[bytes.IndexByte(raw, '{')+1:end])) > 0 {
		out = append(out, ',')
	}
	out = rawjson.AppendString(out, key)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, raw[end:]...)
}
