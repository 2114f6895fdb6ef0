package proxy

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/rawjson"
)

// ResponsesMessages maps the items of a Responses "input" array onto
// chat-shaped messages, the shape the Engine works on, and returns for each
// message the indices of the items it stands for:
//
//   - a message item ({"type":"message"} or any item with a role) is a
//     message of that role, its input_text/output_text parts as text
//     blocks; role "developer" becomes "system";
//   - consecutive calls (function_call, custom_tool_call, local_shell_call,
//     and any other item that is not an output), with the reasoning items
//     among them, are one assistant message whose tool_calls are the calls;
//   - an output (function_call_output, custom_tool_call_output, any type
//     ending in "_output") is a role "tool" message answering its call_id,
//     its output as content.
//
// The mapping is for the Engine only: messages the Engine keeps go
// upstream as their original items, byte for byte.
func ResponsesMessages(items [][]byte) ([]agentctx.Message, [][]int, error) {
	its := make([]*responseItem, len(items))
	for i, raw := range items {
		it, err := parseResponseItem(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("input item %d: %w", i, err)
		}
		its[i] = it
	}
	msgs, groups := groupResponseItems(its)
	return msgs, groups, nil
}

// responseItem is what one input item maps to.
type responseItem struct {
	kind itemKind
	msg  agentctx.Message   // itemMessage, itemOutput: the message it is
	call *agentctx.ToolCall // itemCall: the call it makes, nil when it has no call_id
}

type itemKind uint8

const (
	itemMessage   itemKind = iota // a message of its own
	itemOutput                    // a tool message of its own
	itemReasoning                 // part of the next assistant message
	itemCall                      // part of the next assistant message, maybe a call
)

// parseResponseItem reads one input item (splitting it once).
func parseResponseItem(raw []byte) (*responseItem, error) {
	if rawjson.Kind(raw) != '{' {
		return nil, fmt.Errorf("not an object")
	}
	ms, err := rawjson.Members(raw)
	if err != nil {
		return nil, err
	}
	get := func(key string) []byte {
		for k := len(ms) - 1; k >= 0; k-- {
			if ms[k].Key == key {
				return ms[k].Value
			}
		}
		return nil
	}
	typ, role := stringOf(get("type")), stringOf(get("role"))
	switch {
	case role != "" && (typ == "" || typ == "message"):
		m, err := messageItem(get("content"), role)
		if err != nil {
			return nil, err
		}
		return &responseItem{kind: itemMessage, msg: m}, nil
	case strings.HasSuffix(typ, "_output"):
		m := agentctx.NewMessage(agentctx.RoleTool, outputContent(get("output")))
		m.ToolCallID = stringOf(get("call_id"))
		return &responseItem{kind: itemOutput, msg: m}, nil
	case typ == "reasoning":
		return &responseItem{kind: itemReasoning}, nil
	}
	it := &responseItem{kind: itemCall}
	id := stringOf(get("call_id"))
	if id == "" {
		return it, nil // web_search_call and the like: no result item follows
	}
	args := get("arguments")
	if args == nil {
		args = get("input")
	}
	if args == nil {
		args = get("action")
	}
	a := stringOf(args)
	if a == "" && args != nil && rawjson.Kind(args) != '"' {
		a = string(args)
	}
	it.call = &agentctx.ToolCall{ID: id, Type: "function", Function: agentctx.FunctionCall{Name: stringOf(get("name")), Arguments: a}}
	return it, nil
}

// groupResponseItems maps items onto messages (see ResponsesMessages):
// the messages and the items of each.
func groupResponseItems(its []*responseItem) ([]agentctx.Message, [][]int) {
	var msgs []agentctx.Message
	var groups [][]int
	var pending []int // calls and reasoning not yet closed into a message
	var calls []agentctx.ToolCall
	flush := func() {
		if len(pending) == 0 {
			return
		}
		m := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Content{})
		if len(calls) == 0 {
			m = agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(""))
		}
		m.ToolCalls = calls
		msgs = append(msgs, m)
		groups = append(groups, pending)
		pending, calls = nil, nil
	}
	for i, it := range its {
		switch it.kind {
		case itemMessage, itemOutput:
			flush()
			msgs = append(msgs, it.msg)
			groups = append(groups, []int{i})
		default:
			pending = append(pending, i)
			if it.call != nil {
				calls = append(calls, *it.call)
			}
		}
	}
	flush()
	return msgs, groups
}

// messageItem reads a message item; its text parts become text blocks.
func messageItem(c []byte, role string) (agentctx.Message, error) {
	if role == "developer" {
		role = agentctx.RoleSystem
	}
	if rawjson.Kind(c) == '"' {
		return agentctx.NewMessage(role, agentctx.Text(stringOf(c))), nil
	}
	els, err := rawjson.Elements(c)
	if err != nil {
		return agentctx.Message{}, fmt.Errorf("content is neither a string nor an array")
	}
	blocks := make([]agentctx.Block, 0, len(els))
	for _, el := range els {
		switch t := stringOf(memberOf(el, "type")); t {
		case "input_text", "output_text", "text":
			blocks = append(blocks, agentctx.TextBlock(stringOf(memberOf(el, "text"))))
		default:
			var b agentctx.Block
			if err := b.UnmarshalJSON(el); err != nil {
				return agentctx.Message{}, err
			}
			blocks = append(blocks, b)
		}
	}
	return agentctx.NewMessage(role, agentctx.BlockList(blocks...)), nil
}

func outputContent(raw []byte) agentctx.Content {
	switch rawjson.Kind(raw) {
	case '"':
		return agentctx.Text(stringOf(raw))
	case '[':
		var b strings.Builder
		els, _ := rawjson.Elements(raw)
		for _, el := range els {
			if t := stringOf(memberOf(el, "text")); t != "" {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(t)
			}
		}
		return agentctx.Text(b.String())
	case 0:
		return agentctx.Text("")
	}
	return agentctx.Text(string(raw))
}

// spliceResponses writes the "input" array for the messages to send: the
// original items of every message the Engine kept; for a tool result whose
// content changed, its original item with only "output" replaced; new
// messages (a summary) as message items.
func spliceResponses(items [][]byte, in []agentctx.Message, groups [][]int, a *alignment) ([]byte, error) {
	byCall := map[string]int{}
	for k := range in {
		if in[k].Role == agentctx.RoleTool {
			byCall[in[k].ToolCallID] = k
		}
	}
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	buf := make([]byte, 1, n+n/8) // room for what the Engine changes
	buf[0] = '['
	first := true
	emit := func(raw []byte) {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, raw...)
	}
	for j := range a.out {
		if k := a.match[j]; k >= 0 {
			for _, i := range groups[k] {
				emit(items[i])
			}
			continue
		}
		m := &a.out[j]
		switch {
		case m.Role == agentctx.RoleTool:
			text := rawjson.AppendString(nil, m.Content.AsText())
			if k, ok := byCall[m.ToolCallID]; ok {
				item := items[groups[k][0]]
				if v := memberOf(item, "output"); v != nil {
					emit(replaceValue(item, v, text))
					continue
				}
			}
			b := []byte(`{"type":"function_call_output","call_id":`)
			b = rawjson.AppendString(b, m.ToolCallID)
			b = append(b, `,"output":`...)
			b = append(b, text...)
			emit(append(b, '}'))
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				b := []byte(`{"type":"function_call","call_id":`)
				b = rawjson.AppendString(b, tc.ID)
				b = append(b, `,"name":`...)
				b = rawjson.AppendString(b, tc.Function.Name)
				b = append(b, `,"arguments":`...)
				b = rawjson.AppendString(b, tc.Function.Arguments)
				emit(append(b, '}'))
			}
		default:
			window, text := nativeWindow(m) // a provider's compaction (native_responses.go)
			for _, it := range window {
				emit(it)
			}
			role, part := m.Role, "input_text"
			switch role {
			case agentctx.RoleAssistant:
				part = "output_text"
			case agentctx.RoleSystem:
				role = "developer"
			}
			b := []byte(`{"type":"message","role":`)
			b = rawjson.AppendString(b, role)
			b = append(b, `,"content":[{"type":"`+part+`","text":`...)
			b = rawjson.AppendString(b, text)
			emit(append(b, "}]}"...))
		}
	}
	return append(buf, ']'), nil
}

func messageText(m *agentctx.Message) string {
	if m.Content.IsText() {
		return m.Content.Text()
	}
	var parts []string
	for _, b := range m.Content.Blocks() {
		if b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
