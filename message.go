package agentctx

import (
	"encoding/json"
	"fmt"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Roles used by the Anthropic and OpenAI wire shapes.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // OpenAI: a tool result message
)

// Message is one message of a conversation, in the Anthropic shape
// ({role, content: string | blocks}) or the OpenAI chat shape (with
// tool_calls on assistant messages and role "tool" messages carrying a
// tool_call_id).
//
// Decoding keeps every member: the typed fields mirror the members the
// library works with, and everything else (metadata such as timestamp and
// messageStatus, provider fields, unknown fields) is kept in order and
// written back as it came. Encoding an unchanged message gives back its
// input bytes, compacted. See MarshalJSON.
//
// Message is a value. Its slices (Content blocks, ToolCalls) are shared
// between copies and must be treated as read-only: build changed messages
// with the With methods or Clone, which never write to shared memory.
type Message struct {
	Role      string     // "role"
	Content   Content    // "content"
	ToolCalls []ToolCall // "tool_calls": OpenAI assistant messages
	// ToolCallID is "tool_call_id" of an OpenAI tool message. A message
	// that has none but a "tool_call_ids" list holding one id (SWE-agent's
	// history) answers that id: ToolCallID holds it and encoding writes it
	// back as that one-element list.
	ToolCallID string

	members []member
}

// ToolCall is one element of an OpenAI assistant message's tool_calls.
type ToolCall struct {
	ID       string       // "id"
	Type     string       // "type", normally "function"
	Function FunctionCall // "function"

	members []member
}

// FunctionCall is the function member of a ToolCall.
type FunctionCall struct {
	Name      string // "name"
	Arguments string // "arguments": JSON text, as given
	members   []member
}

// NewMessage returns a message with a role and content.
func NewMessage(role string, content Content) Message {
	return Message{Role: role, Content: content}
}

// Field returns the raw JSON of a member that has no typed field (for example
// "timestamp", "name" or "extra"), and whether it exists.
func (m Message) Field(key string) (json.RawMessage, bool) {
	if mb := findMember(m.members, key); mb != nil && mb.flags&known == 0 {
		raw := mb.token()
		return json.RawMessage(raw[:len(raw):len(raw)]), true
	}
	return nil, false
}

// WithField returns a copy of m with the member key set to value, which is
// marshaled to JSON (a json.RawMessage is used as is, after validation).
// Keys of typed fields are rejected: set the field instead.
func (m Message) WithField(key string, value any) (Message, error) {
	switch key {
	case "role", "content", "tool_calls", "tool_call_id":
		return m, fmt.Errorf("agentctx: %q is a typed field of Message", key)
	case "tool_call_ids":
		if hasKnown(m.members, key) {
			return m, fmt.Errorf("agentctx: %q holds ToolCallID: set the field instead", key)
		}
	}
	raw, err := marshalValue(value)
	if err != nil {
		return m, fmt.Errorf("agentctx: field %q: %w", key, err)
	}
	m.members = withMember(m.members, key, raw)
	return m, nil
}

// WithoutFields returns a copy of m without the named members that have no
// typed field (see StripMetadata).
func (m Message) WithoutFields(keys ...string) Message {
	for _, k := range keys {
		if mb := findMember(m.members, k); mb != nil && mb.flags&known == 0 {
			m.members = withoutMembers(m.members, keys...)
			break
		}
	}
	return m
}

// WithContent returns a copy of m with new content.
func (m Message) WithContent(c Content) Message {
	m.Content = c
	return m
}

// WithBlock returns a copy of m whose content block i is replaced by b. It
// panics if the content has no block i, like an index out of range.
func (m Message) WithBlock(i int, b Block) Message {
	blocks := append([]Block(nil), m.Content.blocks...)
	blocks[i] = b
	m.Content = Content{kind: ContentBlocks, blocks: blocks}
	return m
}

// Clone returns a deep copy of m that shares no mutable memory with it.
func (m Message) Clone() Message {
	m.members = append([]member(nil), m.members...)
	m.Content = m.Content.clone()
	if m.ToolCalls != nil {
		tcs := make([]ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.members = append([]member(nil), tc.members...)
			tc.Function.members = append([]member(nil), tc.Function.members...)
			tcs[i] = tc
		}
		m.ToolCalls = tcs
	}
	return m
}

func marshalValue(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		if err := rawjson.Valid(raw); err != nil {
			return nil, err
		}
		return append([]byte(nil), raw...), nil
	}
	return rawjson.Marshal(v)
}

// MarshalJSON writes the message losslessly: members in their original
// order, unchanged values byte for byte (whitespace removed), changed typed
// fields re-encoded, typed fields new to the message appended.
//
// Note that encoding/json's Marshal HTML-escapes what a Marshaler returns;
// use AppendJSON, EncodeMessages or an Encoder with SetEscapeHTML(false)
// to keep strings byte for byte.
func (m Message) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(nil)
}

// AppendJSON appends the lossless JSON of m to dst.
func (m Message) AppendJSON(dst []byte) ([]byte, error) {
	e := encoder{buf: dst, mode: modePreserve}
	m.encode(&e)
	return e.buf, e.err
}

// UnmarshalJSON decodes a message, keeping every member.
func (m *Message) UnmarshalJSON(data []byte) error {
	return m.decode(append([]byte(nil), data...), nil)
}

// DecodeMessage decodes one message from raw JSON. The result may share
// memory with raw, which must not be modified afterwards.
func DecodeMessage(raw []byte) (Message, error) {
	var m Message
	if err := m.decode(raw, nil); err != nil {
		return Message{}, err
	}
	return m, nil
}

func (m *Message) decode(raw []byte, a *memberArena) error {
	*m = Message{}
	if rawjson.Kind(raw) != '{' {
		return fmt.Errorf("message is not a JSON object")
	}
	var err error
	m.members, err = decodeMembers(raw, a, func(mb *member) bool {
		switch mb.key {
		case "role":
			return decodeStr(mb, &m.Role)
		case "tool_call_id":
			return decodeStr(mb, &m.ToolCallID)
		case "tool_call_ids":
			return decodeIDList(mb)
		case "content":
			m.Content = decodeContent(mb, a)
			return true
		case "tool_calls":
			switch rawjson.Kind(mb.raw) {
			case 'n':
				return true
			case '[':
				tcs, ok := decodeToolCalls(mb.raw, a)
				if ok {
					m.ToolCalls = tcs
				}
				return ok
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	// "tool_call_id" wins over "tool_call_ids"; the list is then opaque.
	if ids := findMember(m.members, "tool_call_ids"); ids != nil && ids.flags&known != 0 {
		if findMember(m.members, "tool_call_id") != nil {
			ids.flags &^= known
		} else {
			m.ToolCallID = ids.str
		}
	}
	return nil
}

// decodeIDList claims a "tool_call_ids" member holding exactly one string:
// its str is the id. The caller settles which id member wins.
func decodeIDList(mb *member) bool {
	elems, err := rawjson.Elements(mb.raw)
	if err != nil || len(elems) != 1 || rawjson.Kind(elems[0]) != '"' {
		return false
	}
	mb.str = rawjson.Unquote(elems[0])
	return true
}

func decodeToolCalls(raw []byte, a *memberArena) ([]ToolCall, bool) {
	elems, err := rawjson.Elements(raw)
	if err != nil {
		return nil, false
	}
	tcs := make([]ToolCall, len(elems))
	for i, el := range elems {
		if rawjson.Kind(el) != '{' {
			return nil, false
		}
		tc := &tcs[i]
		tc.members, err = decodeMembers(el, a, func(mb *member) bool {
			switch mb.key {
			case "id":
				return decodeStr(mb, &tc.ID)
			case "type":
				return decodeStr(mb, &tc.Type)
			case "function":
				if rawjson.Kind(mb.raw) != '{' {
					return false
				}
				fc := &tc.Function
				fc.members, err = decodeMembers(mb.raw, a, func(fm *member) bool {
					switch fm.key {
					case "name":
						return decodeStr(fm, &fc.Name)
					case "arguments":
						return decodeStr(fm, &fc.Arguments)
					}
					return false
				})
				return err == nil
			}
			return false
		})
		if err != nil {
			return nil, false
		}
	}
	return tcs, true
}

// encode writes m's JSON: its members in their order (the typed fields'
// values where code set them), then the typed fields no member held.
func (m *Message) encode(e *encoder) {
	e.buf = append(e.buf, '{')
	first := true
	var seen msgSeen
	if m.builtInCode() {
		// A message made by code: typed fields first, then added members.
		m.encodeUnseenTyped(e, &first, false, false, false, false)
		seen = msgSeen{true, true, true, true}
	}
	for i := range m.members {
		mb := &m.members[i]
		if mb.flags&injected != 0 && e.skipInjected {
			continue
		}
		if mb.flags&known == 0 {
			m.encodeOther(e, &first, mb, &seen)
		} else {
			m.encodeKnown(e, &first, mb, &seen)
		}
	}
	m.encodeUnseenTyped(e, &first, seen.role, seen.content, seen.calls, seen.callID)
	e.buf = append(e.buf, '}')
}

// msgSeen records which of a message's typed fields encode has written.
type msgSeen struct{ role, content, calls, callID bool }

// encodeOther writes a member that is not a typed field's as it was
// read. A typed key whose input value had another JSON type is kept as
// written unless code has since set the typed field.
func (m *Message) encodeOther(e *encoder, first *bool, mb *member, seen *msgSeen) {
	switch {
	case mb.key == "role" && m.Role != "" && !seen.role:
		seen.role = true
		e.key(first, nil, "role")
		e.str(nil, m.Role)
	case mb.key == "tool_call_id" && m.ToolCallID != "" && !seen.callID:
		seen.callID = true
		e.key(first, nil, "tool_call_id")
		e.str(nil, m.ToolCallID)
	case mb.key == "tool_calls" && m.ToolCalls != nil && !seen.calls:
		seen.calls = true
		e.key(first, nil, "tool_calls")
		encodeToolCalls(e, m.ToolCalls, nil)
	case mb.key == "role" && seen.role, mb.key == "tool_call_id" && seen.callID, mb.key == "tool_calls" && seen.calls:
	default:
		e.key(first, mb, mb.key)
		e.raw(mb.raw)
	}
}

// encodeKnown writes the typed field a member holds, once.
func (m *Message) encodeKnown(e *encoder, first *bool, mb *member, seen *msgSeen) {
	switch mb.key {
	case "role":
		if !seen.role {
			seen.role = true
			e.key(first, mb, "role")
			e.str(mb, m.Role)
		}
	case "content":
		if !seen.content {
			seen.content = true
			if m.Content.kind != ContentNone {
				e.key(first, mb, "content")
				m.Content.encode(e, mb)
			}
		}
	case "tool_calls":
		if !seen.calls {
			seen.calls = true
			e.key(first, mb, "tool_calls")
			encodeToolCalls(e, m.ToolCalls, mb)
		}
	case "tool_call_id":
		if !seen.callID {
			seen.callID = true
			e.key(first, mb, "tool_call_id")
			e.str(mb, m.ToolCallID)
		}
	case "tool_call_ids":
		if !seen.callID {
			seen.callID = true
			e.key(first, mb, "tool_call_ids")
			if mb.str == m.ToolCallID {
				e.raw(mb.raw)
			} else {
				e.buf = append(e.buf, '[')
				e.str(nil, m.ToolCallID)
				e.buf = append(e.buf, ']')
			}
		}
	}
}

// builtInCode reports whether no member of m came from decoded input.
func (m *Message) builtInCode() bool {
	for i := range m.members {
		if m.members[i].rawKey != nil {
			return false
		}
	}
	return true
}

// encodeUnseenTyped writes the typed fields that have no member yet and
// hold a value.
func (m *Message) encodeUnseenTyped(e *encoder, first *bool, seenRole, seenContent, seenCalls, seenCallID bool) {
	if !seenRole && m.Role != "" {
		e.key(first, nil, "role")
		e.str(nil, m.Role)
	}
	if !seenContent && m.Content.kind != ContentNone {
		e.key(first, nil, "content")
		m.Content.encode(e, nil)
	}
	if !seenCalls && len(m.ToolCalls) > 0 {
		e.key(first, nil, "tool_calls")
		encodeToolCalls(e, m.ToolCalls, nil)
	}
	if !seenCallID && m.ToolCallID != "" {
		e.key(first, nil, "tool_call_id")
		e.str(nil, m.ToolCallID)
	}
}

// encodeToolCalls writes tool_calls; nil is written as null when the input
// had null there, else as [].
func encodeToolCalls(e *encoder, tcs []ToolCall, mb *member) {
	if tcs == nil && mb != nil && rawjson.Kind(mb.raw) == 'n' {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.buf = append(e.buf, '[')
	for i := range tcs {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		tcs[i].encode(e)
	}
	e.buf = append(e.buf, ']')
}

func (tc *ToolCall) encode(e *encoder) {
	e.buf = append(e.buf, '{')
	first := true
	var seenID, seenType, seenFn bool
	for i := range tc.members {
		mb := &tc.members[i]
		if mb.flags&known == 0 {
			switch mb.key {
			case "id":
				seenID = true
			case "type":
				seenType = true
			case "function":
				seenFn = true
			}
			e.key(&first, mb, mb.key)
			e.raw(mb.raw)
			continue
		}
		switch mb.key {
		case "id":
			seenID = true
			e.key(&first, mb, "id")
			e.str(mb, tc.ID)
		case "type":
			seenType = true
			e.key(&first, mb, "type")
			e.str(mb, tc.Type)
		case "function":
			seenFn = true
			e.key(&first, mb, "function")
			tc.Function.encode(e)
		}
	}
	if !seenID && tc.ID != "" {
		e.key(&first, nil, "id")
		e.str(nil, tc.ID)
	}
	if !seenType && tc.Type != "" {
		e.key(&first, nil, "type")
		e.str(nil, tc.Type)
	}
	if !seenFn {
		e.key(&first, nil, "function")
		tc.Function.encode(e)
	}
	e.buf = append(e.buf, '}')
}

func (fc *FunctionCall) encode(e *encoder) {
	e.buf = append(e.buf, '{')
	first := true
	var seenName, seenArgs bool
	for i := range fc.members {
		mb := &fc.members[i]
		if mb.flags&known == 0 {
			switch mb.key {
			case "name":
				seenName = true
			case "arguments":
				seenArgs = true
			}
			e.key(&first, mb, mb.key)
			e.raw(mb.raw)
			continue
		}
		switch mb.key {
		case "name":
			seenName = true
			e.key(&first, mb, "name")
			e.str(mb, fc.Name)
		case "arguments":
			seenArgs = true
			e.key(&first, mb, "arguments")
			e.str(mb, fc.Arguments)
		}
	}
	if !seenName {
		e.key(&first, nil, "name")
		e.str(nil, fc.Name)
	}
	if !seenArgs {
		e.key(&first, nil, "arguments")
		e.str(nil, fc.Arguments)
	}
	e.buf = append(e.buf, '}')
}
