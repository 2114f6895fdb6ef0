// Package gemcontents maps the contents of a Gemini API request
// (generateContent's "contents": user and model turns of parts) onto
// agentctx messages, and writes the contents to send for the messages a
// pipeline prepared.
//
// The mapping is for the pipeline only: what it keeps goes upstream as
// the client sent it, byte for byte, and the parts it does not read
// (thoughts, thought signatures, inline data) are never moved:
//
//   - a model content is one assistant message: its text parts (not the
//     thoughts) as text blocks, its functionCall parts as tool calls
//     (their id, or one made of the content's and the part's index, their
//     name, their args as the arguments). A model content is never
//     rewritten: kept whole, or dropped whole, so that a thought
//     signature stays on the part it came on (Gemini 3 validates them);
//   - a user content is a tool message for each functionResponse part
//     (answering the call of its id, else the first call of its name in
//     the model content before, its output, error or JSON as content),
//     then one user message of its other parts' texts, when it has any.
//     A tool message the pipeline changed (an offloaded result) is written
//     back as its part with only the response's output replaced.
package gemcontents

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Ref is what of the contents a message stands for: the index of its
// content, and of the content's parts it was made of.
type Ref struct {
	Content int
	Parts   []int
}

// Messages maps contents (the elements of a request's "contents") onto
// messages (see the package documentation) and returns, for each
// message, what of the contents it stands for.
func Messages(contents [][]byte) ([]agentctx.Message, []Ref, error) {
	var msgs []agentctx.Message
	var refs []Ref
	var calls []call // the function calls of the last model content
	for i, raw := range contents {
		if rawjson.Kind(raw) != '{' {
			return nil, nil, fmt.Errorf("contents[%d]: not an object", i)
		}
		parts, err := rawjson.Elements(rawjson.Get(raw, "parts"))
		if err != nil {
			return nil, nil, fmt.Errorf("contents[%d].parts: %w", i, err)
		}
		if stringOf(rawjson.Get(raw, "role")) == "model" {
			m, cs := modelMessage(i, parts)
			msgs, refs, calls = append(msgs, m), append(refs, Ref{Content: i, Parts: all(len(parts))}), cs
			continue
		}
		ms, rs := userMessages(i, parts, calls)
		msgs, refs = append(msgs, ms...), append(refs, rs...)
	}
	return msgs, refs, nil
}

// call is a function call of a model content: its id (given or made) and
// its name, and whether a response answered it.
type call struct {
	id, name string
	answered bool
}

func all(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// field returns the member key of a part, or its snake_case spelling
// (the API takes both).
func field(part []byte, key, snake string) []byte {
	if v := rawjson.Get(part, key); v != nil {
		return v
	}
	return rawjson.Get(part, snake)
}

// CallID is the id the mapping gives a function call without one: made of
// its content's and its part's index, stable while the contents before it
// do not change.
func CallID(content, part int) string {
	return "gemini-call-" + strconv.Itoa(content) + "-" + strconv.Itoa(part)
}

// modelMessage maps a model content's parts.
func modelMessage(i int, parts [][]byte) (agentctx.Message, []call) {
	var blocks []agentctx.Block
	var tcs []agentctx.ToolCall
	var calls []call
	for j, p := range parts {
		if fc := field(p, "functionCall", "function_call"); rawjson.Kind(fc) == '{' {
			id := stringOf(rawjson.Get(fc, "id"))
			if id == "" {
				id = CallID(i, j)
			}
			name := stringOf(rawjson.Get(fc, "name"))
			args := rawjson.Get(fc, "args")
			if rawjson.Kind(args) != '{' {
				args = []byte("{}")
			}
			tcs = append(tcs, agentctx.ToolCall{ID: id, Type: "function",
				Function: agentctx.FunctionCall{Name: name, Arguments: string(rawjson.AppendCompact(nil, args))}})
			calls = append(calls, call{id: id, name: name})
			continue
		}
		if t := rawjson.Get(p, "text"); rawjson.Kind(t) == '"' && rawjson.Kind(rawjson.Get(p, "thought")) != 't' {
			blocks = append(blocks, agentctx.TextBlock(rawjson.Unquote(t)))
		}
	}
	content := agentctx.Text("")
	switch {
	case len(blocks) > 0:
		content = agentctx.BlockList(blocks...)
	case len(tcs) > 0:
		content = agentctx.Content{}
	}
	m := agentctx.NewMessage(agentctx.RoleAssistant, content)
	m.ToolCalls = tcs
	return m, calls
}

// userMessages maps a user content's parts: a tool message for each
// function response, then a user message of the other parts, if any.
func userMessages(i int, parts [][]byte, calls []call) ([]agentctx.Message, []Ref) {
	var msgs []agentctx.Message
	var refs []Ref
	var blocks []agentctx.Block
	var other []int
	for j, p := range parts {
		fr := field(p, "functionResponse", "function_response")
		if rawjson.Kind(fr) != '{' {
			if t := rawjson.Get(p, "text"); rawjson.Kind(t) == '"' {
				blocks = append(blocks, agentctx.TextBlock(rawjson.Unquote(t)))
			}
			other = append(other, j)
			continue
		}
		m := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(ResponseText(rawjson.Get(fr, "response"))))
		m.ToolCallID = answers(calls, stringOf(rawjson.Get(fr, "id")), stringOf(rawjson.Get(fr, "name")), i, j)
		msgs, refs = append(msgs, m), append(refs, Ref{Content: i, Parts: []int{j}})
	}
	if len(other) > 0 {
		content := agentctx.Text("")
		if len(blocks) > 0 {
			content = agentctx.BlockList(blocks...)
		}
		msgs, refs = append(msgs, agentctx.NewMessage(agentctx.RoleUser, content)), append(refs, Ref{Content: i, Parts: other})
	}
	return msgs, refs
}

// answers returns the id of the call a response (of id and name)
// answers: the call of its id, else the first unanswered call of its
// name; a response that answers none keeps its id, or gets one of its
// own.
func answers(calls []call, id, name string, i, j int) string {
	for k := range calls {
		if id != "" && calls[k].id == id {
			calls[k].answered = true
			return id
		}
	}
	for k := range calls {
		if !calls[k].answered && calls[k].name == name && (id == "" || strings.HasPrefix(calls[k].id, "gemini-call-")) {
			calls[k].answered = true
			return calls[k].id
		}
	}
	if id != "" {
		return id
	}
	return CallID(i, j)
}

// ResponseText returns the text of a function response: its output (Gemini
// CLI's {"output": ...}) or its error when a string, else its JSON.
func ResponseText(resp []byte) string {
	for _, k := range [...]string{"output", "error"} {
		if v := rawjson.Get(resp, k); rawjson.Kind(v) == '"' {
			return rawjson.Unquote(v)
		}
	}
	if resp == nil {
		return ""
	}
	return string(rawjson.AppendCompact(nil, resp))
}

// SpliceParts returns the "contents" array for the messages to send, out,
// as the parts of its bytes, in order, reading the contents kept in place
// (rawjson.ArrayParts: a run of contents kept, adjacent in body, is one
// part): each content all of whose messages are kept, as it came; a
// content some of whose messages were dropped or changed, with only its
// "parts" rewritten (the parts kept as they came, a changed tool result's
// part with its response's output replaced); an assistant message the
// pipeline changed, as the model content it was (never rewritten); new
// messages (a summary) as contents of their own. match[j] is the index in
// in of out[j], or -1; contents are the request's contents, in and refs
// their messages (Messages).
func SpliceParts(body []byte, contents [][]byte, in []agentctx.Message, refs []Ref, out []agentctx.Message, match []int) [][]byte {
	w := rawjson.NewArrayParts(body)
	splice(contents, in, refs, out, match, func(raw []byte, kept bool) {
		if kept {
			w.Kept(raw)
		} else {
			w.New(raw)
		}
	})
	return w.Parts()
}

// AppendSplice appends to dst the array SpliceParts returns the parts of.
func AppendSplice(dst []byte, contents [][]byte, in []agentctx.Message, refs []Ref, out []agentctx.Message, match []int) []byte {
	buf := append(dst, '[')
	first := true
	splice(contents, in, refs, out, match, func(raw []byte, _ bool) {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, raw...)
	})
	return append(buf, ']')
}

// piece is what a message to send writes: parts of a content (each part
// as it came, or its replacement), or a content of its own (raw).
type piece struct {
	content int // -1: raw is a new content
	parts   []int
	repl    map[int][]byte // part index → its replacement
	raw     []byte
}

// splice calls emit with each content of the array for out, in order:
// kept reports a content as it came.
func splice(contents [][]byte, in []agentctx.Message, refs []Ref, out []agentctx.Message, match []int, emit func(raw []byte, kept bool)) {
	byCall := map[string]int{} // tool results and assistant messages of in, by call id
	for k := range in {
		if in[k].Role == agentctx.RoleTool {
			byCall["r\x00"+in[k].ToolCallID] = k
		}
		for _, tc := range in[k].ToolCalls {
			byCall["c\x00"+tc.ID] = k
		}
	}
	var pieces []piece
	for j := range out {
		pieces = append(pieces, pieceOf(contents, in, refs, byCall, &out[j], match[j]))
	}
	emitPieces(contents, pieces, emit)
}

// pieceOf returns what a message to send writes (see SpliceParts).
func pieceOf(contents [][]byte, in []agentctx.Message, refs []Ref, byCall map[string]int, m *agentctx.Message, k int) piece {
	if k >= 0 {
		return piece{content: refs[k].Content, parts: refs[k].Parts}
	}
	switch {
	case m.Role == agentctx.RoleTool:
		if k, ok := byCall["r\x00"+m.ToolCallID]; ok {
			r := refs[k]
			part := partOf(contents[r.Content], r.Parts[0])
			if repl, ok := withOutput(part, messageText(m)); ok {
				return piece{content: r.Content, parts: r.Parts, repl: map[int][]byte{r.Parts[0]: repl}}
			}
		}
		b := []byte(`{"role":"user","parts":[{"functionResponse":{"id":`)
		b = rawjson.AppendString(b, m.ToolCallID)
		b = append(b, `,"name":"","response":{"output":`...)
		b = rawjson.AppendString(b, messageText(m))
		return piece{content: -1, raw: append(b, "}}}]}"...)}
	case len(m.ToolCalls) > 0:
		if k, ok := byCall["c\x00"+m.ToolCalls[0].ID]; ok && in[k].Role == agentctx.RoleAssistant {
			// A model content is kept whole or dropped whole: its thought
			// signatures stay on their parts.
			return piece{content: refs[k].Content, parts: refs[k].Parts}
		}
		b := []byte(`{"role":"model","parts":[`)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"functionCall":{"id":`...)
			b = rawjson.AppendString(b, tc.ID)
			b = append(b, `,"name":`...)
			b = rawjson.AppendString(b, tc.Function.Name)
			b = append(b, `,"args":`...)
			args := []byte(tc.Function.Arguments)
			if rawjson.Kind(args) != '{' || rawjson.Valid(args) != nil {
				args = []byte("{}")
			}
			b = append(append(b, args...), "}}"...)
		}
		return piece{content: -1, raw: append(b, "]}"...)}
	}
	role := "user"
	if m.Role == agentctx.RoleAssistant {
		role = "model"
	}
	b := []byte(`{"role":"` + role + `","parts":[{"text":`)
	b = rawjson.AppendString(b, messageText(m))
	return piece{content: -1, raw: append(b, "}]}"...)}
}

// emitPieces emits the contents of the pieces: consecutive pieces of one
// content are that content, as it came when they hold all of its parts
// unchanged, else with its "parts" rewritten.
func emitPieces(contents [][]byte, pieces []piece, emit func(raw []byte, kept bool)) {
	for i := 0; i < len(pieces); {
		p := pieces[i]
		if p.content < 0 {
			emit(p.raw, false)
			i++
			continue
		}
		c := p.content
		keep := map[int]bool{}
		repl := map[int][]byte{}
		for ; i < len(pieces) && pieces[i].content == c; i++ {
			for _, j := range pieces[i].parts {
				keep[j] = true
			}
			for j, r := range pieces[i].repl {
				repl[j] = r
			}
		}
		raw := contents[c]
		parts, _ := rawjson.Elements(rawjson.Get(raw, "parts"))
		if len(keep) == len(parts) && len(repl) == 0 {
			emit(raw, true)
			continue
		}
		b := []byte{'['}
		for j, part := range parts {
			if !keep[j] {
				continue
			}
			if len(b) > 1 {
				b = append(b, ',')
			}
			if r, ok := repl[j]; ok {
				part = r
			}
			b = append(b, part...)
		}
		emit(replaceValue(raw, rawjson.Get(raw, "parts"), append(b, ']')), false)
	}
}

// partOf returns part j of a content.
func partOf(content []byte, j int) []byte {
	parts, _ := rawjson.Elements(rawjson.Get(content, "parts"))
	if j < len(parts) {
		return parts[j]
	}
	return nil
}

// withOutput returns a functionResponse part with its response's output
// replaced by text: the "output" member's value when it has one, else the
// response itself as {"output": text}.
func withOutput(part []byte, text string) ([]byte, bool) {
	fr := field(part, "functionResponse", "function_response")
	resp := rawjson.Get(fr, "response")
	if rawjson.Kind(resp) != '{' {
		return nil, false
	}
	q := rawjson.AppendString(nil, text)
	if out := rawjson.Get(resp, "output"); out != nil {
		return replaceValue(part, out, q), true
	}
	return replaceValue(part, resp, append(append([]byte(`{"output":`), q...), '}')), true
}

// Match returns, for each message to send, the index of the input message
// it is (the same JSON encoding), in order, or -1 for a message the
// pipeline changed or added; sources, when not nil, is what the pipeline
// said of out (pipeline.Result.Sources).
func Match(in, out []agentctx.Message, sources []int) ([]int, error) {
	match := make([]int, len(out))
	enc := make([][]byte, len(in))
	next := 0
	for j := range out {
		match[j] = -1
		if len(sources) == len(out) && sources[j] == next && next < len(in) {
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

// messageText returns a message's string content, or its blocks' texts
// joined by newlines.
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

func stringOf(raw []byte) string {
	if rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

// replaceValue returns raw with value (a subslice of raw) replaced by
// repl.
func replaceValue(raw, value, repl []byte) []byte {
	off := int(rawjson.Offset(raw, value))
	out := make([]byte, 0, len(raw)-len(value)+len(repl))
	out = append(out, raw[:off]...)
	out = append(out, repl...)
	return append(out, raw[off+len(value):]...)
}
