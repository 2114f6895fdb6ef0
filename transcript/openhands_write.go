package transcript

import (
	"bytes"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// ohSource is what an OpenHands conversation keeps of its input to write it
// back in its own shape: the record (nil for a bare array of events), the
// events in order with the message each became, and the messages as read.
type ohSource struct {
	record   []byte   // the evaluation record; nil for a JSON array of events
	messages bool     // the record's history holds messages, not events
	events   [][]byte // the history's events
	evMsg    []int    // per event: the index in msgs of the message it is part of; -1 for none
	msgs     []agentctx.Message
}

// ohFile writes an OpenHands document of several conversations back
// (agentctx.Writer): each conversation as its record (see
// ohSource.AppendDocument). A document without its conversations (its
// messages set as one list with WithMessages) is written as JSON Lines of
// messages.
type ohFile struct{}

// AppendDocument implements agentctx.Writer.
func (ohFile) AppendDocument(dst []byte, d *agentctx.Document) ([]byte, error) {
	e := encoder{buf: dst}
	for _, c := range d.Conversations() {
		src, ok := c.Writer().(*ohSource)
		if !ok {
			writeLines(&e, c.Messages)
			continue
		}
		src.append(&e, c)
	}
	return e.buf, e.err
}

// AppendDocument writes one OpenHands conversation back in its shape
// (agentctx.Writer): its record, every member kept, with its history
// rewritten (or, for a bare array of events, the array). Events that are
// no message (recalls, state changes) stay where they were; the events of
// a message read unchanged stay byte for byte; a tool result whose content
// changed (pruned, offloaded) keeps its observation event with the new
// content; the events of messages no longer sent (compacted away) are left
// out; a message that was not read (a summary, a synthetic result) becomes
// a new event before the next message's.
func (src *ohSource) AppendDocument(dst []byte, d *agentctx.Document) ([]byte, error) {
	e := encoder{buf: dst}
	src.append(&e, d)
	return e.buf, e.err
}

// writeLines writes msgs as JSON Lines.
func writeLines(e *encoder, msgs []agentctx.Message) {
	for k := range msgs {
		e.message(&msgs[k])
		e.buf = append(e.buf, '\n')
	}
}

// append writes conversation c back as its record (see AppendDocument).
func (src *ohSource) append(e *encoder, c *agentctx.Document) {
	var history []byte
	if src.messages {
		var err error
		history, err = agentctx.MarshalMessages(c.FileMessages())
		e.fail(err)
	} else {
		history = ohHistory(c.Messages, src)
	}
	if src.record == nil {
		e.buf = append(append(e.buf, history...), '\n')
		return
	}
	ms, err := rawjson.Members(src.record)
	if err != nil {
		e.fail(err)
		return
	}
	e.buf = append(e.buf, '{')
	for k, m := range ms {
		if k > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(append(e.buf, m.RawKey...), ':')
		if m.Key == "history" {
			e.buf = append(e.buf, history...)
		} else {
			e.raw(m.Value)
		}
	}
	e.buf = append(e.buf, '}', '\n')
}

// ohHistory returns the events that hold msgs, laid out in the events src
// was read from (see encodeOpenHands).
func ohHistory(msgs []agentctx.Message, src *ohSource) []byte {
	a := alignOH(msgs, src)
	first := make([]int, len(src.msgs))
	for i := range first {
		first[i] = -1
	}
	for k, i := range src.evMsg {
		if i >= 0 && first[i] < 0 {
			first[i] = k
		}
	}
	out := []byte{'['}
	add := func(ev []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = rawjson.AppendCompact(out, ev)
	}
	for k, ev := range src.events {
		i := src.evMsg[k]
		if i >= 0 && first[i] == k {
			for _, j := range a.before[i] {
				add(newOHEvent(&msgs[j]))
			}
		}
		switch {
		case i < 0:
			add(ev)
		case a.outOf[i] < 0:
			// no longer sent: left out
		case !a.changed[i]:
			add(ev)
		default:
			add(withObservationContent(ev, msgs[a.outOf[i]].Content.AsText()))
		}
	}
	for _, j := range a.pending {
		add(newOHEvent(&msgs[j]))
	}
	return append(out, ']')
}

// ohAlignment places the messages to write against the messages read.
type ohAlignment struct {
	outOf   []int         // message read → the message written for it; -1 when none
	changed []bool        // message read → a tool result written with another content
	before  map[int][]int // message read → new messages written before it
	pending []int         // new messages written after the last one read
}

// alignOH aligns msgs with the messages src was read as: each message to
// write is a message read unchanged, a tool result read with another
// content, or new.
func alignOH(msgs []agentctx.Message, src *ohSource) ohAlignment {
	enc := func(m *agentctx.Message) []byte {
		b, _ := m.AppendJSON(nil)
		return b
	}
	orig := make([][]byte, len(src.msgs))
	for i := range src.msgs {
		orig[i] = enc(&src.msgs[i])
	}
	// Align: each output message is a message read unchanged, a tool
	// result read with another content, or new.
	outOf := make([]int, len(src.msgs))
	changed := make([]bool, len(src.msgs))
	for i := range outOf {
		outOf[i] = -1
	}
	before := map[int][]int{} // message read → new messages written before it
	var pending []int
	p := 0
	for j := range msgs {
		m := &msgs[j]
		b := enc(m)
		found := -1
		for i := p; i < len(src.msgs) && found < 0; i++ {
			if bytes.Equal(orig[i], b) {
				found = i
			}
		}
		if found < 0 && m.Role == agentctx.RoleTool {
			for i := p; i < len(src.msgs) && found < 0; i++ {
				if src.msgs[i].Role == agentctx.RoleTool && src.msgs[i].ToolCallID == m.ToolCallID {
					found, changed[i] = i, true
				}
			}
		}
		if found < 0 {
			pending = append(pending, j)
			continue
		}
		outOf[found], p = j, found+1
		if len(pending) > 0 {
			before[found], pending = pending, nil
		}
	}
	return ohAlignment{outOf: outOf, changed: changed, before: before, pending: pending}
}

// withObservationContent returns an observation event with its content
// replaced by text, and the command prefix and suffix the import adds
// around it emptied, so that it reads back as text.
func withObservationContent(ev []byte, text string) []byte {
	out := setMember(ev, rawjson.AppendString(nil, text), "content")
	for _, f := range []string{"prefix", "suffix"} {
		out = setMember(out, []byte(`""`), "extras", "metadata", f)
	}
	return out
}

// setMember returns the object raw with the member at path set to value
// when that member exists; raw otherwise.
func setMember(raw, value []byte, path ...string) []byte {
	ms, err := rawjson.Members(raw)
	if err != nil {
		return raw
	}
	out := []byte{'{'}
	for k, m := range ms {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(append(out, m.RawKey...), ':')
		switch {
		case m.Key != path[0]:
			out = append(out, m.Value...)
		case len(path) == 1:
			out = append(out, value...)
		case rawjson.Kind(m.Value) == '{':
			out = append(out, setMember(m.Value, value, path[1:]...)...)
		default:
			out = append(out, m.Value...)
		}
	}
	return append(out, '}')
}

// newOHEvent returns the OpenHands event that imports as m: a user or
// agent message action, a system action, an observation answering a tool
// call, or (an assistant message with calls) its actions' first with the
// model response that carries every call.
func newOHEvent(m *agentctx.Message) []byte {
	text := m.Content.AsText()
	ev := []byte(`{`)
	if ts, ok := m.Field(agentctx.FieldTimestamp); ok {
		ev = append(append(ev, `"timestamp":`...), ts...)
		ev = append(ev, ',')
	}
	str := func(s string) []byte { return rawjson.AppendString(nil, s) }
	switch {
	case m.Role == agentctx.RoleTool:
		obs := "run"
		if m.Status() == "error" {
			obs = "error"
		}
		ev = append(ev, `"source":"environment","observation":`...)
		ev = append(append(ev, str(obs)...), `,"content":`...)
		ev = append(append(ev, str(text)...), `,"tool_call_metadata":{"function_name":`...)
		name := ""
		if raw, ok := m.Field("name"); ok && rawjson.Kind(raw) == '"' {
			name = rawjson.Unquote(raw)
		}
		ev = append(append(ev, str(name)...), `,"tool_call_id":`...)
		ev = append(append(ev, str(m.ToolCallID)...), `}}`...)
		return ev
	case m.Role == agentctx.RoleSystem:
		ev = append(ev, `"source":"agent","action":"system","args":{"content":`...)
		return append(append(ev, str(text)...), `}}`...)
	case m.Role == agentctx.RoleAssistant && len(m.ToolCalls) > 0:
		// One action per call would repeat the response; one action with
		// the whole response imports as the same assistant message.
		me, _ := m.AppendJSON(nil)
		calls := []byte("[]")
		if ms, err := rawjson.Members(me); err == nil {
			for _, mb := range ms {
				if mb.Key == "tool_calls" {
					calls = mb.Value
				}
			}
		}
		tc := m.ToolCalls[0]
		ev = append(ev, `"source":"agent","action":"call","args":{},"tool_call_metadata":{"function_name":`...)
		ev = append(append(ev, str(tc.Function.Name)...), `,"tool_call_id":`...)
		ev = append(append(ev, str(tc.ID)...), `,"model_response":{"id":`...)
		ev = append(append(ev, str("agentctx-"+tc.ID)...), `,"choices":[{"message":{"content":`...)
		ev = append(append(ev, str(text)...), `,"tool_calls":`...)
		return append(append(ev, calls...), `}}]}}}`...)
	}
	source := "agent"
	if m.Role == agentctx.RoleUser {
		source = "user"
	}
	ev = append(append(ev, `"source":`...), str(source)...)
	ev = append(ev, `,"action":"message","message":`...)
	ev = append(append(ev, str(text)...), `,"args":{"content":`...)
	return append(append(ev, str(text)...), `}}`...)
}
