package agentctx

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/runes"
)

// ContentKind tells which JSON form a Content has.
type ContentKind uint8

const (
	// ContentNone is the zero value: the content member is absent.
	ContentNone ContentKind = iota
	// ContentText is a JSON string.
	ContentText
	// ContentBlocks is a JSON array of blocks (Anthropic blocks or OpenAI
	// content parts).
	ContentBlocks
	// ContentNull is JSON null (OpenAI assistant messages with tool calls).
	ContentNull
	// ContentOther is any other JSON value, kept as written.
	ContentOther
)

// String returns the kind's name.
func (k ContentKind) String() string {
	switch k {
	case ContentNone:
		return "none"
	case ContentText:
		return "text"
	case ContentBlocks:
		return "blocks"
	case ContentNull:
		return "null"
	case ContentOther:
		return "other"
	}
	return "invalid"
}

// Content is the content of a message or of a tool_result block: a string, a
// list of blocks, null, or absent. The zero value is absent content.
//
// Content is a value; the slice returned by Blocks is shared with copies and
// must be treated as read-only. Build new content with Text, BlockList or
// Null.
type Content struct {
	kind ContentKind
	// s is the text of ContentText and the JSON of ContentOther (one
	// string for the two: every message and tool result holds a Content,
	// and a proxy keeps 100,000 of them for a large request).
	s      string
	blocks []Block // ContentBlocks
}

// Text returns string content.
func Text(s string) Content { return Content{kind: ContentText, s: s} }

// BlockList returns block-array content. A nil or empty list is written as [].
func BlockList(blocks ...Block) Content {
	if blocks == nil {
		blocks = []Block{}
	}
	return Content{kind: ContentBlocks, blocks: blocks}
}

// otherContent returns content of any other JSON value, raw, which it
// keeps: raw must never be modified afterwards (it is the input of a
// decode, which must not be, or a copy of its own).
func otherContent(raw []byte) Content {
	return Content{kind: ContentOther, s: unsafe.String(unsafe.SliceData(raw), len(raw))}
}

// str returns the text of string content ("" for any other form).
func (c Content) str() string {
	if c.kind != ContentText {
		return ""
	}
	return c.s
}

// rawJSON returns the JSON of ContentOther (nil for any other form), for
// reading only: it is the string's memory.
func (c Content) rawJSON() []byte {
	if c.kind != ContentOther || c.s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(c.s), len(c.s))
}

// Null returns JSON null content.
func Null() Content { return Content{kind: ContentNull} }

// Kind returns the content's form.
func (c Content) Kind() ContentKind { return c.kind }

// IsText reports whether the content is a string.
func (c Content) IsText() bool { return c.kind == ContentText }

// Text returns the string of string content, and "" for any other form.
func (c Content) Text() string { return c.str() }

// Blocks returns the blocks of block-array content (read-only), and nil for
// any other form.
func (c Content) Blocks() []Block { return c.blocks }

// Raw returns the JSON of ContentOther as written (a copy of its own);
// nil for other forms.
func (c Content) Raw() []byte { return bytes.Clone(c.rawJSON()) }

// IsEmpty reports whether the content has nothing in it: absent, null, "" or
// an empty block list.
func (c Content) IsEmpty() bool {
	switch c.kind {
	case ContentText:
		return c.s == ""
	case ContentBlocks:
		return len(c.blocks) == 0
	case ContentOther:
		return false
	}
	return true
}

// AsText returns the content as one string: the string itself for string
// content, and for any other form its compact JSON exactly as JavaScript's
// JSON.stringify would write it (no HTML escaping, members in order). Absent
// content is "". This is the form that is counted and offloaded.
func (c Content) AsText() string {
	switch c.kind {
	case ContentNone:
		return ""
	case ContentText:
		return c.str()
	}
	e := encoder{mode: modeCanonical}
	c.encode(&e, nil)
	return string(e.buf)
}

// Chars returns the number of characters of the content as SPEC §1 defines
// them: Unicode code points of AsText.
func (c Content) Chars() int {
	if c.kind == ContentText {
		return utf8.RuneCountInString(c.str())
	}
	switch c.kind {
	case ContentNone:
		return 0
	case ContentNull:
		return 4
	}
	return runes.Count(c.AppendText(nil))
}

// AppendText appends AsText to dst and returns the extended buffer:
// the text without a string made for it, so that a caller counting the
// characters of many contents reuses one buffer.
func (c Content) AppendText(dst []byte) []byte {
	switch c.kind {
	case ContentNone:
		return dst
	case ContentText:
		return append(dst, c.str()...)
	}
	e := encoder{mode: modeCanonical, buf: dst}
	c.encode(&e, nil)
	return e.buf
}

// Equal reports whether two contents hold the same JSON value in the same
// form (compared in canonical form).
func (c Content) Equal(d Content) bool {
	if c.kind != d.kind {
		return false
	}
	if c.kind == ContentText {
		return c.str() == d.str()
	}
	return c.AsText() == d.AsText()
}

// clone returns a deep copy.
func (c Content) clone() Content {
	if c.blocks != nil {
		bs := make([]Block, len(c.blocks))
		for i := range c.blocks {
			bs[i] = c.blocks[i].Clone()
		}
		c.blocks = bs
	}
	return c
}

// decodeContent decodes a content value. It never fails: JSON that does not
// fit the string/blocks/null forms is kept as ContentOther.
func decodeContent(m *member, a *memberArena) Content {
	switch rawjson.Kind(m.raw) {
	case '"':
		s, _ := decodeString(m)
		return Content{kind: ContentText, s: s}
	case 'n':
		return Content{kind: ContentNull}
	case '[':
		var buf [8][]byte // split on the stack: most contents have a few blocks
		elems, err := rawjson.AppendElements(buf[:0], m.raw)
		if err == nil {
			blocks := make([]Block, len(elems))
			ok := true
			for i, el := range elems {
				if rawjson.Kind(el) != '{' {
					ok = false
					break
				}
				if err := blocks[i].decode(el, a); err != nil {
					ok = false
					break
				}
			}
			if ok {
				return Content{kind: ContentBlocks, blocks: blocks}
			}
		}
	}
	return otherContent(m.raw)
}

// encode writes the content value. m is the original member, if any.
func (c Content) encode(e *encoder, m *member) {
	switch c.kind {
	case ContentText:
		e.str(m, c.str())
	case ContentBlocks:
		e.buf = append(e.buf, '[')
		for i := range c.blocks {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			c.blocks[i].encode(e)
		}
		e.buf = append(e.buf, ']')
	case ContentOther:
		e.raw(c.rawJSON())
	default:
		e.buf = append(e.buf, "null"...)
	}
}

// MarshalJSON writes the content value losslessly (absent content is null).
func (c Content) MarshalJSON() ([]byte, error) {
	e := encoder{mode: modePreserve}
	c.encode(&e, nil)
	return e.buf, e.err
}

// UnmarshalJSON decodes a content value: a string, a block array, null, or
// any other JSON value (kept as ContentOther).
func (c *Content) UnmarshalJSON(data []byte) error {
	raw := append([]byte(nil), data...)
	if err := rawjson.Valid(raw); err != nil {
		return err
	}
	*c = decodeContent(&member{raw: raw}, nil)
	return nil
}
