package agentctx

import (
	"encoding/json"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Member returns the raw JSON of a top-level member of the document's
// object (a request body's "tools", "model", ...), and whether it has one.
// The bytes are the document's own; callers must not modify them.
func (d *Document) Member(key string) (json.RawMessage, bool) {
	if m := findMember(d.members, key); m != nil {
		return json.RawMessage(m.token()), true
	}
	return nil, false
}

// RequestDocument returns the document of a request body (a JSON object
// whose "messages" member is the list of messages, Format FormatObject)
// from messages decoded already: list is the raw value of body's
// "messages" member, a subslice of body, and msgs its elements decoded in
// order (with DecodeMessage, perhaps for an earlier request that sent the
// same bytes). The other top-level members are split, as ParseDocument
// splits them, without reading list again; the result is the document
// ParseDocument returns for body. Callers that see one conversation grow
// request by request use it to decode only the messages that are new.
//
// body, list and the memory of msgs must not be modified afterwards. An
// error matching ErrInvalidInput reports a body that is not such an
// object or a list that is not its "messages".
func RequestDocument(body, list []byte, msgs []Message) (*Document, error) {
	i := rawjson.SkipSpace(body, 0)
	at := int(rawjson.Offset(body, list))
	if len(list) == 0 || at == 0 || at+len(list) > len(body) || &body[at] != &list[0] {
		return nil, &InputError{Msg: "request document: the list of messages is not a subslice of the body"}
	}
	var listKey bool
	ms, err := rawjson.MembersFunc(body[i:], func(key string, j int) (int, error) {
		if j+i != at {
			return -1, nil
		}
		listKey = key == "messages"
		return j + len(list), nil
	})
	if err != nil {
		return nil, syntaxError(body, err)
	}
	if !listKey {
		return nil, errNotMessagesList
	}
	return requestDocument(ms, list, msgs)
}

var errNotMessagesList = &InputError{Msg: `request document: the list is not the body's "messages" array`}

// requestDocument returns the document of a body split into ms, whose
// "messages" member is list.
func requestDocument(ms []rawjson.Member, list []byte, msgs []Message) (*Document, error) {
	if v := findRaw(ms, "messages"); len(v) == 0 || len(list) == 0 || &v[0] != &list[0] || len(v) != len(list) || rawjson.Kind(list) != '[' {
		return nil, errNotMessagesList
	}
	doc := &Document{Format: FormatObject, members: opaqueMembers(ms), listKey: "messages"}
	doc.setMessages(msgs)
	return doc, nil
}

// BodyMember is a top-level member of a request body as split
// (internal/base/rawjson.Member): Key, the key decoded; RawKey, its token as
// written; Value, the raw value. RawKey and Value are subslices of the
// body.
type BodyMember = rawjson.Member

// RequestDocumentSplit is RequestDocument for a body whose top level was
// split already, by the caller that read its other members (the proxy,
// with internal/lib/wire.SplitBody): members are body's top-level members in
// order, as the split found them, and the body is not split again. It
// checks that each member lies in body after the one before, and that
// list is the value of the last "messages" member (an error matching
// ErrInvalidInput otherwise); it does not read the values again. The
// result is the document ParseDocument returns for body.
//
// body, members, list and the memory of msgs must not be modified
// afterwards.
func RequestDocumentSplit(body []byte, members []BodyMember, list []byte, msgs []Message) (*Document, error) {
	at := int64(0)
	for _, m := range members {
		k, v := rawjson.Offset(body, m.RawKey), rawjson.Offset(body, m.Value)
		if len(m.RawKey) == 0 || len(m.Value) == 0 || k < at || k+int64(len(m.RawKey)) > v || v+int64(len(m.Value)) > int64(len(body)) ||
			&body[k] != &m.RawKey[0] || &body[v] != &m.Value[0] {
			return nil, &InputError{Msg: "request document: the members are not the body's split"}
		}
		at = v + int64(len(m.Value))
	}
	return requestDocument(members, list, msgs)
}

// WithMember returns a copy of the document whose top-level member key
// holds raw (a JSON value): the member is replaced where it stands, or
// added after the others. d is not modified. Only a document read from a
// JSON object (FormatObject, a request body) has members; for any other an
// error matching ErrInvalidInput is returned. raw must be valid JSON and is
// not copied.
func (d *Document) WithMember(key string, raw json.RawMessage) (*Document, error) {
	if d.Format != FormatObject || d.listKey == "" {
		return nil, &InputError{Msg: "set member " + key + ": the document is not a JSON object with messages"}
	}
	if key == d.listKey {
		return nil, &InputError{Msg: "set member " + key + ": use WithMessages for the messages"}
	}
	if err := rawjson.Valid(raw); err != nil {
		return nil, &InputError{Msg: "set member " + key + ": " + err.Error()}
	}
	c := *d
	c.convs = nil
	c.members = append([]member(nil), d.members...)
	if m := findMember(c.members, key); m != nil {
		m.raw, m.flags, m.str = raw, 0, ""
		return &c, nil
	}
	c.members = append(c.members, member{key: key, raw: raw})
	return &c, nil
}
