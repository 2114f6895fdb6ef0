package agentctx

import (
	"encoding/json"

	"github.com/agentctx/agentctx/internal/rawjson"
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
	if v := findRaw(ms, "messages"); !listKey || len(v) == 0 || &v[0] != &list[0] || rawjson.Kind(list) != '[' {
		return nil, &InputError{Msg: `request document: the list is not the body's "messages" array`}
	}
	doc := &Document{Format: FormatObject, members: opaqueMembers(ms), listKey: "messages"}
	doc.setMessages(msgs)
	return doc, nil
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
