package agentctx

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// Format is the shape of an input document.
type Format string

// The request formats this package reads (SPEC §1): a request body and
// the lists of messages agents keep. Formats lists them with how each is
// recognised and an example. The agent transcript formats (Claude Code
// sessions, OpenHands output, SWE-agent and mini-swe-agent trajectories)
// are read by package transcript, into the same Document.
const (
	// FormatArray is a JSON array of messages.
	FormatArray Format = "json"
	// FormatObject is a JSON object with a "messages" array: an Anthropic or
	// OpenAI request body. Every other member (system, model, tools, ...)
	// is kept.
	FormatObject Format = "object"
	// FormatJSONL is JSON Lines (or any sequence of JSON objects), one
	// message per value.
	FormatJSONL Format = "jsonl"
)

// Document is a conversation read from one input document. Encode writes it
// back in the shape it was read in. This package reads request formats
// (see Formats); package transcript reads agent transcripts into a
// Document too, and sets the counts below.
type Document struct {
	Format   Format
	Messages []Message

	// Skipped counts the input records that are not messages (Claude Code
	// progress, snapshots, system records, sidechain records in a main
	// session, records before the last compact boundary; OpenHands state
	// changes and recalls), and SkippedKinds counts them by kind (a record
	// type, "system/<subtype>", "sidechain", "before compact boundary",
	// an OpenHands action or observation). Notice sums them up in a line.
	Skipped      int
	SkippedKinds map[string]int
	// Merged counts Claude Code records folded into an earlier message
	// (assistant records sharing message.id, and the tool results answering
	// them).
	Merged int
	// Boundaries are the compact_boundary records of a Claude Code session,
	// in order.
	Boundaries []CompactBoundary

	// Name names the conversation when the format gives it one (the
	// instance_id of an OpenHands record).
	Name string

	// PartialLine is, for JSON Lines (messages, Claude Code or OpenHands
	// records), the number of an incomplete last line that was skipped: a
	// last line without its newline that is not a whole JSON object (a
	// file still being written, as Claude Code writes its sessions); 0
	// when every line was whole. Notice reports it. A bad line that ends
	// in a newline, or is not the last, is an error.
	PartialLine int

	// LiveFrom is, for a Claude Code session read from its last compact
	// boundary on (the default), the line of that boundary; 0 when the
	// whole history was read. Notice reports it.
	LiveFrom int

	members []member    // the members of the top-level object (request body, trajectory)
	listKey string      // the member holding the messages: "messages" or "history"
	held    []held      // messages of the file that are not model messages
	convs   []*Document // the conversations of a document that holds several
	writer  Writer      // writes the document back (package transcript's readers)
}

// CompactBoundary is a compact_boundary record of a Claude Code session:
// where Claude Code summarized the conversation so far and went on from
// the summary (the user message after the record).
type CompactBoundary struct {
	// Line is the 1-based line of the record in the input.
	Line int `json:"line"`
	// Message is the index in Document.Messages of the first message read
	// after the boundary, or -1 when the history before the last boundary
	// was not read (the default) or no message follows.
	Message int `json:"message_index"`
	// Trigger ("auto" or "manual") and PreTokens (the context size when
	// Claude Code compacted) come from the record's compactMetadata.
	Trigger   string `json:"trigger,omitempty"`
	PreTokens int    `json:"pre_tokens,omitempty"`
}

// held is a message of the file that is not sent to a model, with the
// number of model messages that followed it (its place from the end).
type held struct {
	msg     Message
	fromEnd int
}

// NonModel returns the messages of the file that are kept in it but are
// not model messages (mini-swe-agent's final role "exit" message): they are
// not in Messages, and Encode writes them back where they were, counted
// from the end of the list.
func (d *Document) NonModel() []Message {
	out := make([]Message, len(d.held))
	for k, h := range d.held {
		out[k] = h.msg
	}
	return out
}

// FileMessages returns the messages as the file holds them: Messages with
// the NonModel messages put back at their places, counted from the end.
// A single-shot command returns these, every message it was given.
func (d *Document) FileMessages() []Message {
	return slices.Clip(d.fileMessages())
}

// Notice returns one line saying what the reader left out or found worth
// knowing, or "" when every record of the input is a message: that it
// holds no message, the records skipped with counts by kind, the messages
// kept in the file but not sent, the compact boundaries. Callers print it
// (agentctx prints it on stderr) so that a document is never read short in
// silence.
func (d *Document) Notice() string {
	var parts []string
	convs := d.Conversations()
	empty := 0
	for _, c := range convs {
		if len(c.Messages) == 0 {
			empty++
		}
	}
	switch {
	case len(d.Messages) == 0:
		parts = append(parts, fmt.Sprintf("no messages (%s)", d.Format))
	case empty > 0:
		parts = append(parts, fmt.Sprintf("%d of %d conversations have no messages", empty, len(convs)))
	}
	if d.Skipped > 0 {
		kinds := make([]string, 0, len(d.SkippedKinds))
		for k := range d.SkippedKinds {
			kinds = append(kinds, k)
		}
		slices.SortFunc(kinds, func(a, b string) int {
			if c := cmp.Compare(d.SkippedKinds[b], d.SkippedKinds[a]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for k, kind := range kinds {
			kinds[k] = fmt.Sprintf("%s %d", kind, d.SkippedKinds[kind])
		}
		parts = append(parts, fmt.Sprintf("%s skipped: %s", count(d.Skipped, "record", "records"), strings.Join(kinds, ", ")))
	}
	if n := len(d.held); n > 0 {
		var roles []string
		for _, h := range d.held {
			if r := strconv.Quote(h.msg.Role); !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
		parts = append(parts, fmt.Sprintf("%s with role %s kept in the file, not sent to the model", count(n, "message", "messages"), strings.Join(roles, ", ")))
	}
	if d.PartialLine > 0 {
		parts = append(parts, fmt.Sprintf("line %d is incomplete (a file still being written?): skipped", d.PartialLine))
	}
	if n := len(d.Boundaries); n > 0 {
		if d.LiveFrom > 0 {
			parts = append(parts, fmt.Sprintf("%s: the live context is read, from line %d on", count(n, "compact boundary", "compact boundaries"), d.LiveFrom))
		} else {
			parts = append(parts, fmt.Sprintf("%s: the whole history is read", count(n, "compact boundary", "compact boundaries")))
		}
	}
	return strings.Join(parts, "; ")
}

// count writes n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Conversations returns the conversations the document holds, each as a
// document of its own: one per record of an OpenHands output.jsonl, in
// order. Every other document holds one conversation, itself. Messages of
// a document with several conversations is all of them, one after another.
func (d *Document) Conversations() []*Document {
	if len(d.convs) == 0 {
		return []*Document{d}
	}
	out := make([]*Document, len(d.convs))
	for i, c := range d.convs {
		cp := *c
		out[i] = &cp
	}
	return out
}

// System returns the top-level "system" member of a request body (a string
// or a list of blocks), and whether there is one. System messages inside the
// list are ordinary messages with role "system".
func (d *Document) System() (Content, bool) {
	if m := findMember(d.members, "system"); m != nil {
		return decodeContent(&member{raw: m.raw}, nil), true
	}
	return Content{}, false
}

// WithMessages returns a copy of the document holding msgs instead of its
// messages. d is not modified.
func (d *Document) WithMessages(msgs []Message) *Document {
	c := *d
	c.Messages = msgs
	c.convs = nil
	return &c
}

// WithConversations returns a copy of the document holding msgs[i] as the
// messages of its conversation i (see Conversations), so that Encode
// writes each conversation back in its own place (an OpenHands record per
// conversation). It fails when msgs does not have one list per
// conversation. d is not modified.
func (d *Document) WithConversations(msgs [][]Message) (*Document, error) {
	if len(d.convs) == 0 {
		if len(msgs) != 1 {
			return nil, fmt.Errorf("%w: %d lists of messages for a document of 1 conversation", ErrInvalidInput, len(msgs))
		}
		return d.WithMessages(msgs[0]), nil
	}
	if len(msgs) != len(d.convs) {
		return nil, fmt.Errorf("%w: %d lists of messages for a document of %d conversations", ErrInvalidInput, len(msgs), len(d.convs))
	}
	c := *d
	c.convs = make([]*Document, len(d.convs))
	c.Messages = nil
	for i, conv := range d.convs {
		cc := *conv
		cc.Messages = msgs[i]
		c.convs[i] = &cc
		c.Messages = append(c.Messages, msgs[i]...)
	}
	return &c, nil
}

// ReadFile reads a document from a file; path "-" or "" reads stdin.
func ReadFile(ctx context.Context, path string, stdin io.Reader) (*Document, error) {
	if path == "" || path == "-" {
		return ReadDocument(ctx, stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadDocument(ctx, f)
}

// ReadDocument reads a whole document from r and detects its format from
// its content (see Formats): a JSON array of messages, a JSON object with
// "messages" (a request body), or JSON Lines of messages. Agent
// transcripts (a Claude Code session, an OpenHands output, a SWE-agent
// trajectory) are read by package transcript (transcript.ReadDocument,
// which reads these formats too); here they are an error that says so.
// Malformed input returns an *InputError naming the line, column and byte
// offset (errors.Is(err, ErrInvalidInput)). Reading stops early if ctx is
// cancelled. A document read without error may still hold no message:
// see Document.Notice.
func ReadDocument(ctx context.Context, r io.Reader) (*Document, error) {
	data, err := fsutil.ReadAll(ctx, r)
	if err != nil {
		return nil, err
	}
	return ParseDocument(ctx, data)
}

const expectedShapes = "expected a JSON array, a JSON object with \"messages\" or \"history\", or JSON Lines"

// notAMessage is the error for a value that is not a message: an agent
// transcript's record, most likely.
const notAMessage = "object has no \"role\": not a message (an agent transcript? read it with package transcript)"

// ParseDocument parses a document held in memory (see ReadDocument). The
// result shares memory with data, which must not be modified afterwards.
func ParseDocument(ctx context.Context, data []byte) (*Document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	i := rawjson.SkipSpace(data, 0)
	if i == len(data) {
		return nil, &InputError{Msg: "empty input: " + expectedShapes}
	}
	switch data[i] {
	case '[':
		return parseArray(data)
	case '{':
		end, err := rawjson.ValueEnd(data, i)
		if err != nil {
			return nil, syntaxError(data, err)
		}
		if rawjson.SkipSpace(data, end) == len(data) {
			ms, _ := rawjson.Members(data[i:end])
			if findRaw(ms, "role") == nil && findRaw(ms, "messages") != nil {
				return parseObject(data, i, end, FormatObject, "messages")
			}
		}
		return parseLines(ctx, data)
	}
	return nil, inputErrorAt(data, int64(i), fmt.Sprintf("invalid character %q: %s", rune(data[i]), expectedShapes))
}

func findRaw(ms []rawjson.Member, key string) []byte {
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].Key == key {
			return ms[k].Value
		}
	}
	return nil
}

func parseArray(data []byte) (*Document, error) {
	if err := rawjson.Valid(data); err != nil {
		return nil, syntaxError(data, err)
	}
	elems, err := rawjson.Elements(data)
	if err != nil {
		return nil, syntaxError(data, err)
	}
	doc := &Document{Format: FormatArray}
	if err := doc.decodeMessages(data, elems); err != nil {
		return nil, err
	}
	return doc, nil
}

// decodeMessages decodes the messages of a list into d.Messages, holding
// aside those that are not model messages.
func (d *Document) decodeMessages(data []byte, elems [][]byte) error {
	msgs, err := decodeMessages(data, elems)
	if err != nil {
		return err
	}
	d.setMessages(msgs)
	return nil
}

// setMessages sets d.Messages to the model messages of msgs, holding the
// others aside.
func (d *Document) setMessages(msgs []Message) {
	d.Messages = msgs
	for k := range msgs {
		if !IsModelRole(msgs[k].Role) {
			d.Messages = d.Messages[:0:0]
			for k := range msgs {
				if IsModelRole(msgs[k].Role) {
					d.Messages = append(d.Messages, msgs[k])
				} else {
					d.held = append(d.held, held{msg: msgs[k], fromEnd: len(d.Messages)})
				}
			}
			for k := range d.held {
				d.held[k].fromEnd = len(d.Messages) - d.held[k].fromEnd
			}
			break
		}
	}
}

func decodeMessages(data []byte, elems [][]byte) ([]Message, error) {
	msgs := make([]Message, len(elems))
	for k, el := range elems {
		if err := msgs[k].decode(el, nil); err != nil {
			return nil, inputErrorAt(data, rawjson.Offset(data, el), fmt.Sprintf("message %d: %v", k, err))
		}
	}
	return msgs, nil
}

// parseObject reads an object whose messages are in one member, key:
// "messages" (a request body, a mini-swe-agent trajectory) or "history"
// (a SWE-agent trajectory).
func parseObject(data []byte, i, end int, f Format, key string) (*Document, error) {
	members, err := decodeMembers(data[i:end], nil, func(*member) bool { return false })
	if err != nil {
		return nil, syntaxError(data, err)
	}
	raw := findMember(members, key).raw
	elems, err := rawjson.Elements(raw)
	if err != nil {
		return nil, inputErrorAt(data, rawjson.Offset(data, raw), fmt.Sprintf("%q is not a JSON array", key))
	}
	doc := &Document{Format: f, members: members, listKey: key}
	if err := doc.decodeMessages(data, elems); err != nil {
		return nil, err
	}
	return doc, nil
}

// parseLines reads a sequence of JSON objects (JSON Lines), each a
// message. An incomplete last line is skipped (Document.PartialLine).
func parseLines(ctx context.Context, data []byte) (*Document, error) {
	values, scans, partial, err := rawjson.Lines(ctx, data)
	if err != nil {
		if err == ctx.Err() {
			return nil, err
		}
		return nil, syntaxError(data, err)
	}
	for k, ms := range scans {
		if findRaw(ms, "role") == nil {
			return nil, inputErrorAt(data, rawjson.Offset(data, values[k]), notAMessage)
		}
	}
	doc := &Document{Format: FormatJSONL}
	if err := doc.decodeMessages(data, values); err != nil {
		return nil, err
	}
	doc.PartialLine = partial
	return doc, nil
}

// Encode writes the document in the shape it was read in: a JSON array, the
// object it was read from with its list of messages replaced, or one
// message per line; a document a reader built with a Writer (package
// transcript: a Claude Code session, an OpenHands output) is written by
// it. Messages that are not model messages (NonModel) are written back at
// their place counted from the end. Output is compact JSON ending in a
// newline.
func (d *Document) Encode(w io.Writer) error {
	buf, err := d.AppendJSON(nil)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// AppendJSON appends the encoded document (see Encode) to dst.
func (d *Document) AppendJSON(dst []byte) ([]byte, error) {
	return d.AppendJSONEncoded(dst, nil)
}

// AppendJSONEncoded is AppendJSON given the encodings of messages known
// to the caller: enc(k), when it is not nil, is the encoding of
// d.Messages[k] as Message.AppendJSON writes it, and is copied instead of
// encoding the message again (a request whose messages were sent before,
// decoded with their encodings kept). enc may be nil. A document written
// by its reader's Writer, or holding messages aside (NonModel), is
// encoded whole, as AppendJSON does.
func (d *Document) AppendJSONEncoded(dst []byte, enc func(k int) []byte) ([]byte, error) {
	if d.writer != nil {
		return d.writer.AppendDocument(dst, d)
	}
	e := encoder{buf: dst, mode: modePreserve}
	msgs := d.fileMessages()
	if len(d.held) > 0 {
		enc = nil // msgs are not d.Messages index for index
	}
	switch {
	case d.Format == FormatJSONL:
		for k := range msgs {
			encodeMessage(&e, msgs, k, enc)
			e.buf = append(e.buf, '\n')
		}
	case d.Format == FormatObject || d.members != nil:
		key := cmp.Or(d.listKey, "messages")
		e.buf = append(e.buf, '{')
		first := true
		for k := range d.members {
			m := &d.members[k]
			e.key(&first, m, m.key)
			if m.key == key {
				encodeListWith(&e, msgs, enc)
			} else {
				e.raw(m.raw)
			}
		}
		e.buf = append(e.buf, '}', '\n')
	default:
		encodeListWith(&e, msgs, enc)
		e.buf = append(e.buf, '\n')
	}
	return e.buf, e.err
}

// encodeMessage writes msgs[k], copying enc(k) when enc gives it.
func encodeMessage(e *encoder, msgs []Message, k int, enc func(int) []byte) {
	if enc != nil {
		if b := enc(k); b != nil {
			e.buf = append(e.buf, b...)
			return
		}
	}
	msgs[k].encode(e)
}

// fileMessages returns the messages as the file holds them: Messages with
// the held messages put back at their places from the end.
func (d *Document) fileMessages() []Message {
	if len(d.held) == 0 {
		return d.Messages
	}
	out := make([]Message, 0, len(d.Messages)+len(d.held))
	h := 0
	for k := 0; k <= len(d.Messages); k++ {
		left := len(d.Messages) - k
		for h < len(d.held) && d.held[h].fromEnd >= left {
			out = append(out, d.held[h].msg)
			h++
		}
		if k < len(d.Messages) {
			out = append(out, d.Messages[k])
		}
	}
	return out
}

func encodeList(e *encoder, msgs []Message) { encodeListWith(e, msgs, nil) }

// encodeListWith is encodeList copying the encodings enc gives (see
// AppendJSONEncoded).
func encodeListWith(e *encoder, msgs []Message, enc func(int) []byte) {
	e.buf = append(e.buf, '[')
	for k := range msgs {
		if k > 0 {
			e.buf = append(e.buf, ',')
		}
		encodeMessage(e, msgs, k, enc)
	}
	e.buf = append(e.buf, ']')
}

// MarshalMessages returns msgs as a compact JSON array, losslessly (see
// Message.MarshalJSON).
func MarshalMessages(msgs []Message) ([]byte, error) {
	e := encoder{mode: modePreserve}
	encodeList(&e, msgs)
	return e.buf, e.err
}

// UnmarshalMessages decodes a JSON array of messages losslessly.
func UnmarshalMessages(data []byte) ([]Message, error) {
	if err := rawjson.Valid(data); err != nil {
		return nil, syntaxError(data, err)
	}
	elems, err := rawjson.Elements(data)
	if err != nil {
		return nil, inputErrorAt(data, 0, "not a JSON array of messages")
	}
	return decodeMessages(data, elems)
}
