package agentctx

import (
	"fmt"
	"slices"

	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// The functions in this file are what a reader outside this package (the
// agent transcript readers of package transcript) builds a Document with:
// the document, its conversations, the messages with what their record
// adds, and the errors, alike to those this package's readers return.

// Writer writes a document back in the shape of the file it was read
// from: Document.Encode and AppendJSON call it for a document built with
// NewDocument or JoinConversations. AppendDocument appends the encoded d
// (compact JSON ending in a newline) to dst; d holds the messages to write
// (see Document.WithMessages and FileMessages).
type Writer interface {
	AppendDocument(dst []byte, d *Document) ([]byte, error)
}

// NewDocument returns a document of format f holding msgs, the messages
// as the file holds them: those no model accepts (IsModelRole false) are
// held aside, as every reader does (see NonModel). Encode writes it with
// w; a nil w writes one message per line.
func NewDocument(f Format, msgs []Message, w Writer) *Document {
	d := &Document{Format: f, writer: w}
	d.setMessages(msgs)
	return d
}

// JoinConversations returns a document of format f holding convs, each a
// conversation of its own (see Conversations, WithConversations): its
// Messages are theirs one after another, and its NonModel messages theirs
// at their places. Encode writes it with w. The counts of skipped records
// are not summed: set them on the result.
func JoinConversations(f Format, convs []*Document, w Writer) *Document {
	d := &Document{Format: f, writer: w, convs: slices.Clone(convs)}
	for _, c := range convs {
		d.Messages = append(d.Messages, c.Messages...)
	}
	start := 0
	for _, c := range convs {
		end := start + len(c.Messages)
		for _, h := range c.held {
			d.held = append(d.held, held{msg: h.msg, fromEnd: len(d.Messages) - end + h.fromEnd})
		}
		start = end
	}
	return d
}

// Writer returns the Writer the document was built with (see
// NewDocument), or nil for a document this package read.
func (d *Document) Writer() Writer { return d.writer }

// ParseObject parses data, one JSON object whose member key holds the list
// of messages (a request body's "messages", a trajectory's "history"),
// into a document of format f. Every other member is kept, and Encode
// writes the object back with that member replaced. Messages no model
// accepts are held aside (see NonModel). Errors are *InputError.
func ParseObject(data []byte, key string, f Format) (*Document, error) {
	i := rawjson.SkipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return nil, inputErrorAt(data, int64(i), "not a JSON object")
	}
	end, err := rawjson.ValueEnd(data, i)
	if err != nil {
		return nil, syntaxError(data, err)
	}
	if j := rawjson.SkipSpace(data, end); j != len(data) {
		return nil, inputErrorAt(data, int64(j), "more than one JSON value")
	}
	ms, err := rawjson.Members(data[i:end])
	if err != nil {
		return nil, syntaxError(data, err)
	}
	if rawjson.Kind(findRaw(ms, key)) != '[' {
		return nil, inputErrorAt(data, int64(i), fmt.Sprintf("object has no %q array", key))
	}
	return parseObject(data, i, end, f, key)
}

// InputErrorAt returns the *InputError for a problem at byte offset off
// of data (clamped to data), with its line and column.
func InputErrorAt(data []byte, off int64, msg string) *InputError {
	return inputErrorAt(data, off, msg)
}

// WithRecordField returns a copy of m holding the member key (raw, a JSON
// value) of the record around the message, when m has no member key: a
// Claude Code record's "timestamp". Field, Timestamp and MarshalJSON see
// it as any member; AppendInnerJSON leaves it out, so that the message is
// written back in its record as the record held it.
func (m Message) WithRecordField(key string, raw []byte) Message {
	if findMember(m.members, key) != nil {
		return m
	}
	m.members = append(slices.Clip(m.members), member{key: key, raw: raw, flags: injected})
	return m
}

// AppendInnerJSON appends m to dst as AppendJSON does, without the members
// added with WithRecordField.
func (m Message) AppendInnerJSON(dst []byte) ([]byte, error) {
	e := encoder{buf: dst, mode: modePreserve, skipInjected: true}
	m.encode(&e)
	return e.buf, e.err
}
