// Package respitems maps the items of an OpenAI Responses "input" array
// onto agentctx messages and writes the input to send for the messages a
// pipeline prepared: the one mapping of the proxy (proxy.ResponsesMessages)
// and of the SDK middleware (openaix).
//
// The mapping is for the pipeline only: messages it keeps go upstream as
// their original items, byte for byte (AppendSplice).
package respitems

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/respcompact"
)

// Kind is what an input item is to the mapping.
type Kind uint8

const (
	// KindMessage is a message of its own.
	KindMessage Kind = iota
	// KindOutput is a tool message of its own.
	KindOutput
	// KindReasoning is part of the next assistant message.
	KindReasoning
	// KindCall is part of the next assistant message, maybe a call.
	KindCall
)

// Item is what one input item maps to.
type Item struct {
	Kind Kind
	// Msg is the message a KindMessage or KindOutput item is.
	Msg agentctx.Message
	// Call is the call a KindCall item makes, nil when it has no call_id.
	Call *agentctx.ToolCall
}

// Messages maps the items of a Responses "input" array onto chat-shaped
// messages and returns for each message the indices of the items it
// stands for:
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
func Messages(items [][]byte) ([]agentctx.Message, [][]int, error) {
	its := make([]*Item, len(items))
	for i, raw := range items {
		it, err := Parse(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("input item %d: %w", i, err)
		}
		its[i] = it
	}
	msgs, groups := Group(its)
	return msgs, groups, nil
}

// Parse reads one input item (splitting it once).
func Parse(raw []byte) (*Item, error) {
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
		return &Item{Kind: KindMessage, Msg: m}, nil
	case strings.HasSuffix(typ, "_output"):
		m := agentctx.NewMessage(agentctx.RoleTool, outputContent(get("output")))
		m.ToolCallID = stringOf(get("call_id"))
		return &Item{Kind: KindOutput, Msg: m}, nil
	case typ == "reasoning":
		return &Item{Kind: KindReasoning}, nil
	}
	it := &Item{Kind: KindCall}
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
	it.Call = &agentctx.ToolCall{ID: id, Type: "function", Function: agentctx.FunctionCall{Name: stringOf(get("name")), Arguments: a}}
	return it, nil
}

// Group maps parsed items onto messages (see Messages): the messages and
// the items of each.
func Group(its []*Item) ([]agentctx.Message, [][]int) {
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
		switch it.Kind {
		case KindMessage, KindOutput:
			flush()
			msgs = append(msgs, it.Msg)
			groups = append(groups, []int{i})
		default:
			pending = append(pending, i)
			if it.Call != nil {
				calls = append(calls, *it.Call)
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
		switch t := stringOf(rawjson.Get(el, "type")); t {
		case "input_text", "output_text", "text":
			blocks = append(blocks, agentctx.TextBlock(stringOf(rawjson.Get(el, "text"))))
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
			if t := stringOf(rawjson.Get(el, "text")); t != "" {
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

// SpliceCap is the room to make for the "input" array AppendSplice
// writes for items: their array as it came, and an eighth more for what
// the pipeline changes.
func SpliceCap(items [][]byte) int {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	return n + n/8
}

// AppendSplice appends to dst the "input" array for the messages to send,
// out: the original items of every message matched to an input message
// (match[j] is the index in in of out[j], or -1); for a tool result whose
// content changed, its original item with only "output" replaced; new
// messages (a summary) as message items, a summary holding a provider's
// compacted window (internal/lib/respcompact) as the window's items
// followed by its text. items are the input items, in their messages and
// groups the items of each (Messages). A caller writing the whole body
// writes the array in place.
func AppendSplice(dst []byte, items [][]byte, in []agentctx.Message, groups [][]int, out []agentctx.Message, match []int) []byte {
	buf := append(dst, '[')
	first := true
	splice(items, in, groups, out, match, func(raw []byte, _ bool) {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, raw...)
	})
	return append(buf, ']')
}

// SpliceParts returns the array AppendSplice appends as the parts of its
// bytes, in order, reading the input items in place (rawjson.ArrayParts:
// a run of kept items adjacent in body, of which items are subslices, is
// one part). Joined, the parts are AppendSplice's bytes.
func SpliceParts(body []byte, items [][]byte, in []agentctx.Message, groups [][]int, out []agentctx.Message, match []int) [][]byte {
	w := rawjson.NewArrayParts(body)
	splice(items, in, groups, out, match, func(raw []byte, kept bool) {
		if kept {
			w.Kept(raw)
		} else {
			w.New(raw)
		}
	})
	return w.Parts()
}

// splice calls emit with each item of the array for out, in order (see
// AppendSplice): kept reports an input item as it came.
func splice(items [][]byte, in []agentctx.Message, groups [][]int, out []agentctx.Message, match []int, emit func(raw []byte, kept bool)) {
	var byCall map[string]int // the tool results of in by call id, made when a result changed
	for j := range out {
		if k := match[j]; k >= 0 {
			for _, i := range groups[k] {
				emit(items[i], true)
			}
			continue
		}
		m := &out[j]
		switch {
		case m.Role == agentctx.RoleTool:
			text := rawjson.AppendString(nil, m.Content.AsText())
			if byCall == nil {
				byCall = make(map[string]int)
				for k := range in {
					if in[k].Role == agentctx.RoleTool {
						byCall[in[k].ToolCallID] = k
					}
				}
			}
			if k, ok := byCall[m.ToolCallID]; ok {
				item := items[groups[k][0]]
				if v := rawjson.Get(item, "output"); v != nil {
					emit(replaceValue(item, v, text), false)
					continue
				}
			}
			b := []byte(`{"type":"function_call_output","call_id":`)
			b = rawjson.AppendString(b, m.ToolCallID)
			b = append(b, `,"output":`...)
			b = append(b, text...)
			emit(append(b, '}'), false)
		case len(m.ToolCalls) > 0:
			for _, tc := range m.ToolCalls {
				b := []byte(`{"type":"function_call","call_id":`)
				b = rawjson.AppendString(b, tc.ID)
				b = append(b, `,"name":`...)
				b = rawjson.AppendString(b, tc.Function.Name)
				b = append(b, `,"arguments":`...)
				b = rawjson.AppendString(b, tc.Function.Arguments)
				emit(append(b, '}'), false)
			}
		default:
			window, text := Window(m)
			for _, it := range window {
				emit(it, false)
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
			emit(append(b, "}]}"...), false)
		}
	}
}

// Match returns, for each message to send, the index of the input message
// it is (the same JSON encoding), in order, or -1 for a message the
// pipeline changed or added. sources, when not nil, is what the pipeline
// said of out (pipeline.Result.Sources): a message it kept (sources[j] the
// next input message not matched yet) is matched without being encoded.
func Match(in, out []agentctx.Message, sources []int) ([]int, error) {
	match := make([]int, len(out))
	enc := make([][]byte, len(in))
	next := 0
	for j := range out {
		match[j] = -1
		if j < len(sources) && len(sources) == len(out) && sources[j] == next && next < len(in) {
			match[j] = next
			next++
			continue
		}
		e, err := out[j].AppendJSON(nil)
		if err != nil {
			return nil, err
		}
		for k := next; k < len(in); k++ {
			if enc[k] == nil {
				if enc[k], err = in[k].AppendJSON(nil); err != nil {
					return nil, err
				}
			}
			if bytes.Equal(enc[k], e) {
				match[j], next = k, k+1
				break
			}
		}
	}
	return match, nil
}

// Window returns, for a message written into an input, the items of the
// provider's compacted window it holds (nil when none) and the text to
// write after them.
func Window(m *agentctx.Message) ([][]byte, string) {
	text := Text(m)
	if m.Role != agentctx.RoleUser || !strings.Contains(text, respcompact.Marker) {
		return nil, text
	}
	items, rest, ok := respcompact.Split(text)
	if !ok {
		return nil, text
	}
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out, rest
}

// Text returns a message's string content, or its blocks' texts joined
// by newlines.
func Text(m *agentctx.Message) string {
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

func stringOf(raw []byte) string {
	if rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

// replaceValue returns raw with value (a subslice of raw that kept its
// capacity, as the rawjson scanner leaves them) replaced by repl.
func replaceValue(raw, value, repl []byte) []byte {
	off := cap(raw) - cap(value)
	out := make([]byte, 0, len(raw)-len(value)+len(repl))
	out = append(out, raw[:off]...)
	out = append(out, repl...)
	return append(out, raw[off+len(value):]...)
}
