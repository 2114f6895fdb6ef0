package agentctx

import (
	"bytes"
	"encoding/json"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Block types of the Anthropic Messages API (OpenAI content parts use "text"
// and "image_url"). Any other type is kept as it came.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Block is one element of a content array: an Anthropic content block or an
// OpenAI content part. The typed fields mirror the members that the library
// works with; every other member (signature, source, cache_control, ...) is
// kept and written back unchanged.
type Block struct {
	Type string // "type"

	Text     string // "text": text blocks and OpenAI text parts
	Thinking string // "thinking": thinking blocks

	ID    string          // "id": tool_use
	Name  string          // "name": tool_use
	Input json.RawMessage // "input": tool_use arguments, bytes as given

	ToolUseID string  // "tool_use_id": tool_result
	Content   Content // "content": tool_result (string or blocks)
	IsError   bool    // "is_error": tool_result

	members []member
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// ToolUseBlock returns a tool_use block. input must be valid JSON; nil means {}.
func ToolUseBlock(id, name string, input json.RawMessage) Block {
	if input == nil {
		input = json.RawMessage("{}")
	}
	return Block{Type: BlockToolUse, ID: id, Name: name, Input: input}
}

// ToolResultBlock returns a tool_result block answering the tool_use id.
func ToolResultBlock(toolUseID string, content Content, isError bool) Block {
	return Block{Type: BlockToolResult, ToolUseID: toolUseID, Content: content, IsError: isError}
}

// Field returns the raw JSON of a member that has no typed field (for example
// "signature" or "source"), and whether it exists.
func (b Block) Field(key string) (json.RawMessage, bool) {
	if m := findMember(b.members, key); m != nil && m.flags&known == 0 {
		raw := m.token()
		if isShapeBytes(raw) {
			raw = bytes.Clone(raw) // every block of the shape's: not handed out
		}
		return json.RawMessage(raw[:len(raw):len(raw)]), true
	}
	return nil, false
}

// Clone returns a deep copy of the block.
func (b Block) Clone() Block {
	b.members = append([]member(nil), b.members...)
	b.Content = b.Content.clone()
	return b
}

// MarshalJSON writes the block losslessly (see Message.MarshalJSON).
func (b Block) MarshalJSON() ([]byte, error) {
	e := encoder{mode: modePreserve}
	b.encode(&e)
	return e.buf, e.err
}

// UnmarshalJSON decodes a block, keeping every member.
func (b *Block) UnmarshalJSON(data []byte) error {
	return b.decode(append([]byte(nil), data...), nil)
}

func (b *Block) decode(raw []byte, a *memberArena) error {
	*b = Block{}
	var err error
	b.members, err = decodeMembers(raw, a, func(m *member) bool {
		switch m.key {
		case "type":
			return decodeStr(m, &b.Type)
		case "text":
			return decodeStr(m, &b.Text)
		case "thinking":
			return decodeStr(m, &b.Thinking)
		case "id":
			return decodeStr(m, &b.ID)
		case "name":
			return decodeStr(m, &b.Name)
		case "tool_use_id":
			return decodeStr(m, &b.ToolUseID)
		case "input":
			b.Input = json.RawMessage(m.raw[:len(m.raw):len(m.raw)])
			return true
		case "content":
			b.Content = decodeContent(m, a)
			return true
		case "is_error":
			switch rawjson.Kind(m.raw) {
			case 't':
				b.IsError = true
				return true
			case 'f':
				return true
			}
		}
		return false
	})
	return err
}

func decodeStr(m *member, dst *string) bool {
	s, ok := decodeString(m)
	if ok {
		*dst = s
	}
	return ok
}

// numBlockKeys is the number of typed block members; blockKey(k) names them
// in the order in which typed members absent from the input are written.
const numBlockKeys = 9

func blockKey(k int) string {
	switch k {
	case 0:
		return "type"
	case 1:
		return "text"
	case 2:
		return "thinking"
	case 3:
		return "id"
	case 4:
		return "name"
	case 5:
		return "input"
	case 6:
		return "tool_use_id"
	case 7:
		return "content"
	case 8:
		return "is_error"
	}
	return ""
}

func (b *Block) encode(e *encoder) {
	e.buf = append(e.buf, '{')
	first := true
	var seen [numBlockKeys]bool
	for i := range b.members {
		m := &b.members[i]
		k := blockKeyIndex(m.key)
		if m.flags&known == 0 {
			// Unknown, or a typed key whose value had another JSON type: keep
			// it as written unless code has since set the typed field.
			if k >= 0 {
				if seen[k] {
					continue
				}
				seen[k] = true
				if !b.isZero(k) {
					b.encodeKnown(e, &first, k, nil, true)
					continue
				}
			}
			e.key(&first, m, m.key)
			e.raw(m.raw)
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		b.encodeKnown(e, &first, k, m, true)
	}
	for k := range numBlockKeys {
		if !seen[k] {
			b.encodeKnown(e, &first, k, nil, false)
		}
	}
	e.buf = append(e.buf, '}')
}

func blockKeyIndex(key string) int {
	for k := range numBlockKeys {
		if blockKey(k) == key {
			return k
		}
	}
	return -1
}

// isZero reports whether typed member k holds its zero value.
func (b *Block) isZero(k int) bool {
	switch blockKey(k) {
	case "input":
		return b.Input == nil
	case "content":
		return b.Content.kind == ContentNone
	case "is_error":
		return !b.IsError
	}
	return b.stringField(k) == ""
}

// encodeKnown writes typed member k. A member that was in the input is
// always written; one that was not is written only when set.
func (b *Block) encodeKnown(e *encoder, first *bool, k int, m *member, present bool) {
	switch blockKey(k) {
	case "type", "text", "thinking", "id", "name", "tool_use_id":
		v := b.stringField(k)
		if present || v != "" {
			e.key(first, m, blockKey(k))
			e.str(m, v)
		}
	case "input":
		in := b.Input
		if in == nil && b.Type == BlockToolUse {
			in = json.RawMessage("{}")
		}
		if in == nil {
			if present {
				e.key(first, m, "input")
				e.buf = append(e.buf, "null"...)
			}
			return
		}
		if m == nil || !sameBytes(in, m.raw) {
			if err := rawjson.Valid(in); err != nil {
				e.fail("tool_use %q: input is not valid JSON: %v", b.ID, err)
				return
			}
		}
		e.key(first, m, "input")
		e.raw(in)
	case "content":
		if b.Content.kind != ContentNone {
			e.key(first, m, "content")
			b.Content.encode(e, m)
		}
	case "is_error":
		if present || b.IsError {
			e.key(first, m, "is_error")
			e.boolean(b.IsError)
		}
	}
}

func (b *Block) stringField(k int) string {
	switch blockKey(k) {
	case "type":
		return b.Type
	case "text":
		return b.Text
	case "thinking":
		return b.Thinking
	case "id":
		return b.ID
	case "name":
		return b.Name
	case "tool_use_id":
		return b.ToolUseID
	}
	return ""
}

// sameBytes reports whether a and b are the same memory (not just equal).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
