package agentctx

import (
	"bytes"
	"unsafe"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// DecodeOwnedMessage decodes one message like DecodeMessage, into memory of
// its own: the result shares nothing with raw, which the caller may reuse
// or drop. Its strings are held once, decoded: a string whose JSON encoding
// (as JSON.stringify writes it) is its token as written keeps no copy of
// the token, and content decoded into blocks keeps no copy of its JSON.
// The message encodes exactly as one from DecodeMessage does. It is meant
// for messages kept long, such as a cache of decoded requests: it holds
// about half of what DecodeMessage holds along with its input.
func DecodeOwnedMessage(raw []byte) (Message, error) {
	return decodeOwned(raw, nil)
}

// An OwnedDecoder decodes messages as DecodeOwnedMessage does, reusing its
// working memory from one message to the next: decoding a long request's
// messages one after the other leaves no garbage but what it keeps. The
// zero value is ready to use. An OwnedDecoder is not safe for concurrent
// use.
type OwnedDecoder struct{ arena memberArena }

// Decode decodes raw as DecodeOwnedMessage does. The message shares no
// memory with raw, nor with the decoder: it stays valid after the next
// Decode.
func (d *OwnedDecoder) Decode(raw []byte) (Message, error) {
	d.arena.reset()
	return decodeOwned(raw, &d.arena)
}

// decodeOwned is DecodeOwnedMessage with the member lists taken from a
// (nil: allocated): the lists kept are shared shapes, or copied out of a.
func decodeOwned(raw []byte, a *memberArena) (Message, error) {
	var m Message
	if err := m.decode(raw, a); err != nil {
		return Message{}, err
	}
	m.own()
	keep := sharedMembers
	if a != nil {
		keep = sharedOrCopied
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		tc.members, tc.Function.members = keep(tc.members), keep(tc.Function.members)
	}
	m.members = keep(m.members)
	keepBlockMembers(m.Content, keep)
	return m, nil
}

// own makes m share no memory with the bytes it was decoded from.
func (m *Message) own() {
	dropDecoded(m.members, m.Content)
	if m.ToolCalls != nil {
		dropKnown(m.members, "tool_calls")
	}
	m.members = ownMembers(m.members)
	m.Content = m.Content.own(findMember(m.members, "content"))
	for i := range m.ToolCalls { // in place, as the members
		tc := &m.ToolCalls[i]
		dropKnown(tc.members, "function")
		tc.members = ownMembers(tc.members)
		tc.Function.members = ownMembers(tc.Function.members)
	}
}

// dropKnown drops, before ms is copied, the JSON of the member key when a
// typed field holds it all: a message's "tool_calls" array, which its
// ToolCalls hold, and a call's "function" object, which its Function
// holds (the encoder writes them from those, and a call's arguments were
// kept three times: 5 MB of 10 MB of OpenHands' turns).
func dropKnown(ms []member, key string) {
	if m := findMember(ms, key); m != nil && m.flags&known != 0 {
		m.raw, m.flags = nil, m.flags|dropped
	}
}

// dropDecoded drops, before ms is copied, the JSON of a known "content"
// member that decoded into blocks (Content.own drops it after): the blocks
// hold it all, and a large content is not copied only to be let go.
func dropDecoded(ms []member, c Content) {
	if c.kind != ContentBlocks {
		return
	}
	if m := findMember(ms, "content"); m != nil && m.flags&known != 0 {
		m.raw, m.flags = nil, m.flags|dropped
	}
}

// ownMembers makes the members of ms hold their own bytes: none for a
// string whose token is its canonical encoding (encoder.str and
// member.token write it again from the string). It changes ms in place
// (a message just decoded owns its slices: only the bytes they point
// into are the input's) and returns it.
func ownMembers(ms []member) []member {
	if ms == nil {
		return nil
	}
	out := ms
	for i, mb := range ms {
		if t := rawjson.CommonKeyToken(mb.rawKey); t != nil {
			mb.rawKey = t // shared, read only: not a copy per member
		} else {
			mb.rawKey = bytes.Clone(mb.rawKey)
		}
		if mb.flags&isString != 0 && isCanonicalToken(mb.raw, mb.str) {
			mb.raw, mb.flags = nil, mb.flags|canonicalToken
		} else if mb.flags&known != 0 && mb.key == "is_error" && (rawjson.Kind(mb.raw) == 't' || rawjson.Kind(mb.raw) == 'f') {
			// The boolean typed field (is_error): JSON spells true and
			// false one way, and the encoder writes the field. (Another
			// typed member holding a boolean, a content of true, keeps
			// its token: its field is not a boolean.)
			mb.raw, mb.flags = nil, mb.flags|boolToken
		} else {
			mb.raw = bytes.Clone(mb.raw)
		}
		out[i] = mb
	}
	return out
}

// isCanonicalToken reports whether token is the JSON string s as
// rawjson.AppendString writes it.
func isCanonicalToken(token []byte, s string) bool {
	return rawjson.IsString(token, s) // compared as written: a long string is not copied
}

// own returns c holding its own bytes; m is its member, whose copy of the
// JSON it drops when the content decoded into blocks or text (they hold it
// all).
func (c Content) own(m *member) Content {
	switch c.kind {
	case ContentBlocks:
		for i := range c.blocks { // in place: the blocks of a message just decoded are its own
			c.blocks[i] = c.blocks[i].own()
		}
		if m != nil && m.flags&known != 0 {
			m.raw, m.flags = nil, m.flags|dropped
		}
	case ContentOther:
		if m != nil {
			c = otherContent(m.raw) // a copy already
		} else {
			c = otherContent(bytes.Clone(c.rawJSON()))
		}
	}
	return c
}

// own returns b holding its own bytes.
func (b Block) own() Block {
	dropDecoded(b.members, b.Content)
	b.members = ownMembers(b.members)
	if in := findMember(b.members, "input"); in != nil && in.flags&known != 0 {
		b.Input = in.raw[:len(in.raw):len(in.raw)]
	} else if b.Input != nil {
		b.Input = bytes.Clone(b.Input)
	}
	b.Content = b.Content.own(findMember(b.members, "content"))
	return b
}

// token returns the member's value as written: the string's canonical
// encoding when the token itself was not kept.
func (m *member) token() []byte {
	if m.raw == nil && m.flags&canonicalToken != 0 {
		return rawjson.AppendString(nil, m.str)
	}
	return m.raw
}

// memberShapes are the member lists, once owned, of the commonest
// messages and blocks (a role and a content; text, tool_use and
// tool_result blocks, in the order of the API's examples and in Claude
// Code's, with an is_error and a tool_use's caller), made once and never
// modified. A decoded message or block whose members are one of them, key
// for key and flag for flag (and, for a member with no typed field, byte
// for byte), shares that list instead of holding its own
// (sharedMembers): a request of 100,000 small messages held 47 MB of
// member lists that said only which typed fields were present, in which
// order (issue 24), and 10 MB of a Claude Code session's turns 1.9 MB of
// lists in Claude Code's order.
var memberShapes = makeMemberShapes()

func makeMemberShapes() [][]member {
	var shapes [][]member
	var add func(ms []member, c Content)
	add = func(ms []member, c Content) {
		sh := make([]member, len(ms))
		for i, mb := range ms {
			sh[i] = member{key: mb.key, rawKey: mb.rawKey, flags: mb.flags}
			if mb.flags&known == 0 {
				sh[i].raw = mb.raw // matched byte for byte (shapeIndex)
			}
		}
		if shapeIndex(shapes, ms) < 0 {
			shapes = append(shapes, sh)
		}
		for _, b := range c.blocks {
			add(b.members, b.Content)
		}
	}
	for _, s := range []string{
		`{"role":"user","content":"x"}`,
		`{"role":"user","content":[{"type":"text","text":"x"}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"x","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"x"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"x"}]}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"x","is_error":false}]}`,
		// Claude Code's order, and the caller its tool_use blocks carry
		`{"role":"user","content":[{"tool_use_id":"x","type":"tool_result","content":"x"}]}`,
		`{"role":"user","content":[{"tool_use_id":"x","type":"tool_result","content":"x","is_error":false}]}`,
		`{"role":"user","content":[{"tool_use_id":"x","type":"tool_result","content":[{"type":"text","text":"x"}]}]}`,
		`{"role":"user","content":[{"tool_use_id":"x","type":"tool_result","content":[{"type":"text","text":"x"}],"is_error":false}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"x","input":{},"caller":{"type":"direct"}}]}`,
		// OpenAI Chat Completions: an assistant's calls, a tool's answer
		`{"role":"assistant","content":"x","tool_calls":[{"id":"x","type":"function","function":{"name":"x","arguments":"x"}}]}`,
		`{"role":"tool","tool_call_id":"x","content":"x"}`,
		`{"role":"tool","content":"x","tool_call_id":"x"}`,
	} {
		var m Message
		if err := m.decode([]byte(s), nil); err != nil {
			panic("agentctx: member shape " + s + ": " + err.Error())
		}
		m.own()
		add(m.members, m.Content)
		for _, tc := range m.ToolCalls {
			add(tc.members, Content{})
			add(tc.Function.members, Content{})
		}
	}
	return shapes
}

// isShapeBytes reports whether raw is the bytes of a member of a shape
// (a tool_use's caller), which every message of the shape shares.
func isShapeBytes(raw []byte) bool {
	for _, sh := range memberShapes {
		for i := range sh {
			if sh[i].raw != nil && len(raw) > 0 && unsafe.SliceData(sh[i].raw) == unsafe.SliceData(raw) {
				return true
			}
		}
	}
	return false
}

// shapeIndex returns the index of the shape ms has, or -1. A member has a
// shape's when its key, key token and flags are the shape's and it keeps
// no bytes the shape does not: its value is written again from the typed
// field (a string whose token is canonical, a content held by its blocks,
// a boolean), is the typed field's own bytes (a tool_use's input), or, for
// a member with no typed field, is the shape's bytes.
func shapeIndex(shapes [][]member, ms []member) int {
next:
	for k, sh := range shapes {
		if len(sh) != len(ms) {
			continue
		}
		for i := range ms {
			mb := &ms[i]
			if mb.key != sh[i].key || mb.flags != sh[i].flags || !bytes.Equal(mb.rawKey, sh[i].rawKey) {
				continue next
			}
			if sh[i].raw != nil { // a member with no typed field: its very bytes
				if !bytes.Equal(mb.raw, sh[i].raw) {
					continue next
				}
				continue
			}
			if mb.raw != nil && (mb.key != "input" || mb.flags&known == 0) {
				continue next
			}
		}
		return k
	}
	return -1
}

// keepBlockMembers sets the member list of each block of c (in place:
// they are those of a message just decoded, its own), and of the blocks
// of their content, to keep's of it.
func keepBlockMembers(c Content, keep func([]member) []member) {
	for i := range c.blocks {
		b := &c.blocks[i]
		b.members = keep(b.members)
		keepBlockMembers(b.Content, keep)
	}
}

// sharedOrCopied is sharedMembers for a list in a memberArena: the shared
// list of its shape, or a copy of its own.
func sharedOrCopied(ms []member) []member {
	if k := shapeIndex(memberShapes, ms); k >= 0 {
		return memberShapes[k]
	}
	return copied(ms)
}

// copied returns a copy of ms: nil for nil, and an empty list (still not
// nil: a decoded message, not one made by code) for an empty one.
func copied(ms []member) []member {
	if ms == nil {
		return nil
	}
	if len(ms) == 0 {
		return []member{}
	}
	return append(make([]member, 0, len(ms)), ms...)
}

// sharedMembers returns the shared list of ms's shape (see memberShapes),
// or ms. What a shared list leaves out is never read: the str of a known
// member whose token is canonical (the encoder writes the typed field),
// and the bytes of a known tool_use input, which are the block's Input
// (the encoder then checks Input is valid JSON before writing it, as for
// an input set by code).
func sharedMembers(ms []member) []member {
	if k := shapeIndex(memberShapes, ms); k >= 0 {
		return memberShapes[k]
	}
	return ms
}
