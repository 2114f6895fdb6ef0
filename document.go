package agentctx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentctx/agentctx/internal/rawjson"
)

// Format is the shape of an input document.
type Format string

// The input documents agentctx reads (SPEC §1).
const (
	// FormatArray is a JSON array of messages.
	FormatArray Format = "json"
	// FormatObject is a JSON object with a "messages" array: an Anthropic or
	// OpenAI request body, or a mini-swe-agent .traj.json. Every other
	// member (system, model, tools, info, ...) is kept.
	FormatObject Format = "object"
	// FormatJSONL is JSON Lines (or any sequence of JSON objects), one
	// message per value.
	FormatJSONL Format = "jsonl"
	// FormatClaudeCode is a Claude Code session .jsonl: records of type
	// "user" and "assistant" carry a message and a timestamp; assistant
	// records that share message.id are one message; other records are
	// skipped.
	FormatClaudeCode Format = "claude-code"
	// FormatOpenHands is an OpenHands evaluation output (output.jsonl: one
	// record per instance, its events in "history"), or a JSON array of
	// OpenHands events. The events are imported as OpenAI chat messages,
	// one conversation per record (see Document.Conversations). Encode
	// writes the messages as JSON Lines: events cannot be written back.
	FormatOpenHands Format = "openhands"
)

// Document is a conversation read from one input document. Encode writes it
// back in the shape it was read in.
type Document struct {
	Format   Format
	Messages []Message

	// Skipped counts records that are not messages (Claude Code progress,
	// snapshots, system records, sidechain records).
	Skipped int
	// Merged counts Claude Code records folded into an earlier message
	// (assistant records sharing message.id, and the tool results answering
	// them).
	Merged int

	// Name names the conversation when the format gives it one (the
	// instance_id of an OpenHands record).
	Name string

	members []member    // FormatObject: the members of the top-level object
	convs   []*Document // the conversations of a document that holds several
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

// envelope is the Claude Code record a message was read from, minus the
// message itself.
type envelope struct {
	members []member
}

// System returns the top-level "system" member of a request body (a string
// or a list of blocks), and whether there is one. System messages inside the
// list are ordinary messages with role "system".
func (d *Document) System() (Content, bool) {
	if m := findMember(d.members, "system"); m != nil {
		return decodeContent(&member{raw: m.raw}), true
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

// ReadDocument reads a whole document from r and detects its format: a JSON
// array of messages, a JSON object with "messages", JSON Lines of messages,
// a Claude Code session, or an OpenHands evaluation output (see
// FormatOpenHands). Malformed input returns an *InputError naming
// the line, column and byte offset (errors.Is(err, ErrInvalidInput)). Reading
// stops early if ctx is cancelled.
func ReadDocument(ctx context.Context, r io.Reader) (*Document, error) {
	data, err := readAll(ctx, r)
	if err != nil {
		return nil, err
	}
	return ParseDocument(ctx, data)
}

func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
	}
}

// ParseDocument parses a document held in memory. The result shares memory
// with data, which must not be modified afterwards.
func ParseDocument(ctx context.Context, data []byte) (*Document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	i := rawjson.SkipSpace(data, 0)
	if i == len(data) {
		return nil, &InputError{Msg: "empty input: expected a JSON array, a JSON object with \"messages\", or JSON Lines"}
	}
	switch data[i] {
	case '[':
		return parseArray(data, i)
	case '{':
		end, err := rawjson.ValueEnd(data, i)
		if err != nil {
			return nil, syntaxError(data, err)
		}
		if rawjson.SkipSpace(data, end) == len(data) {
			ms, _ := rawjson.Members(data[i:end])
			if findRaw(ms, "messages") != nil {
				return parseObject(data, i, end)
			}
		}
		return parseLines(ctx, data)
	}
	return nil, inputErrorAt(data, int64(i), fmt.Sprintf("invalid character %q: expected a JSON array, a JSON object with \"messages\", or JSON Lines", rune(data[i])))
}

func findRaw(ms []rawjson.Member, key string) []byte {
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].Key == key {
			return ms[k].Value
		}
	}
	return nil
}

func parseArray(data []byte, i int) (*Document, error) {
	if err := rawjson.Valid(data); err != nil {
		return nil, syntaxError(data, err)
	}
	elems, err := rawjson.Elements(data)
	if err != nil {
		return nil, syntaxError(data, err)
	}
	if len(elems) > 0 && isOpenHandsEvent(elems[0]) {
		events := make([]json.RawMessage, len(elems))
		for k, el := range elems {
			events[k] = el
		}
		return importOpenHands(data, events, func(k int) int64 { return offsetIn(data, elems[k]) })
	}
	msgs, err := decodeMessages(data, elems)
	if err != nil {
		return nil, err
	}
	return &Document{Format: FormatArray, Messages: msgs}, nil
}

func decodeMessages(data []byte, elems [][]byte) ([]Message, error) {
	msgs := make([]Message, len(elems))
	for k, el := range elems {
		if err := msgs[k].decode(el); err != nil {
			return nil, inputErrorAt(data, offsetIn(data, el), fmt.Sprintf("message %d: %v", k, err))
		}
	}
	return msgs, nil
}

func parseObject(data []byte, i, end int) (*Document, error) {
	members, err := decodeMembers(data[i:end], func(*member) bool { return false })
	if err != nil {
		return nil, syntaxError(data, err)
	}
	raw := findMember(members, "messages").raw
	elems, err := rawjson.Elements(raw)
	if err != nil {
		return nil, inputErrorAt(data, offsetIn(data, raw), "\"messages\" is not a JSON array")
	}
	msgs, err := decodeMessages(data, elems)
	if err != nil {
		return nil, err
	}
	return &Document{Format: FormatObject, Messages: msgs, members: members}, nil
}

// parseLines reads a sequence of JSON objects (JSON Lines): messages, or
// Claude Code records when the first object is a record rather than a
// message.
func parseLines(ctx context.Context, data []byte) (*Document, error) {
	var values [][]byte
	for i := rawjson.SkipSpace(data, 0); i < len(data); i = rawjson.SkipSpace(data, i) {
		if len(values)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if data[i] != '{' {
			return nil, inputErrorAt(data, int64(i), fmt.Sprintf("invalid character %q: each line must be a JSON object", rune(data[i])))
		}
		end, err := rawjson.ValueEnd(data, i)
		if err != nil {
			return nil, syntaxError(data, err)
		}
		values = append(values, data[i:end])
		i = end
	}
	first, err := rawjson.Members(values[0])
	if err != nil {
		return nil, syntaxError(data, err)
	}
	if isOpenHandsRecord(first) {
		return parseOpenHands(data, values)
	}
	if findRaw(first, "role") == nil && findRaw(first, "type") != nil {
		return parseClaudeCode(data, values)
	}
	for _, v := range values {
		ms, err := rawjson.Members(v)
		if err != nil {
			return nil, syntaxError(data, err)
		}
		if findRaw(ms, "role") == nil {
			return nil, inputErrorAt(data, offsetIn(data, v), "object has no \"role\": not a message")
		}
	}
	msgs, err := decodeMessages(data, values)
	if err != nil {
		return nil, err
	}
	return &Document{Format: FormatJSONL, Messages: msgs}, nil
}

func parseClaudeCode(data []byte, values [][]byte) (*Document, error) {
	doc := &Document{Format: FormatClaudeCode}
	lastAssistant := -1 // index in doc.Messages of the last assistant message
	for _, v := range values {
		rec, err := decodeMembers(v, func(*member) bool { return false })
		if err != nil {
			return nil, syntaxError(data, err)
		}
		typ := recordString(rec, "type")
		mm := findMember(rec, "message")
		if (typ != RoleUser && typ != RoleAssistant) || mm == nil || rawjson.Kind(mm.raw) != '{' ||
			rawjson.Kind(memberRaw(rec, "isSidechain")) == 't' {
			doc.Skipped++
			continue
		}
		msg, err := DecodeMessage(mm.raw)
		if err != nil {
			return nil, inputErrorAt(data, offsetIn(data, mm.raw), fmt.Sprintf("record message: %v", err))
		}
		if msg.Role == "" {
			msg.Role = typ
		}
		if ts := findMember(rec, FieldTimestamp); ts != nil && findMember(msg.members, FieldTimestamp) == nil {
			msg.members = append(msg.members, member{key: FieldTimestamp, raw: ts.raw, flags: injected})
		}
		msg.env = &envelope{members: rec}

		n := len(doc.Messages)
		switch {
		case msg.Role == RoleAssistant && lastAssistant >= 0 && sameMessageID(&doc.Messages[lastAssistant], &msg) &&
			allToolResultMessages(doc.Messages[lastAssistant+1:]):
			// A later part of the same assistant turn (Claude Code writes one
			// record per content block, interleaved with the results of the
			// calls already made). Fold it into the turn and gather the
			// results that came between into one message after it.
			prev := &doc.Messages[lastAssistant]
			*prev = prev.WithContent(BlockList(concatBlocks(prev.Content.blocks, msg.Content.blocks)...))
			if n > lastAssistant+2 {
				doc.Messages[lastAssistant+1] = mergeResults(doc.Messages[lastAssistant+1:])
				doc.Merged += n - lastAssistant - 2
				doc.Messages = doc.Messages[:lastAssistant+2]
			}
			doc.Merged++
		case msg.Role == RoleUser && n >= 2 && isToolResultMessage(&msg) && isToolResultMessage(&doc.Messages[n-1]) &&
			lastAssistant == n-2:
			doc.Messages[n-1] = mergeResults([]Message{doc.Messages[n-1], msg})
			doc.Merged++
		default:
			doc.Messages = append(doc.Messages, msg)
			if msg.Role == RoleAssistant {
				lastAssistant = len(doc.Messages) - 1
			}
		}
	}
	return doc, nil
}

func memberRaw(ms []member, key string) []byte {
	if m := findMember(ms, key); m != nil {
		return m.raw
	}
	return nil
}

func recordString(ms []member, key string) string {
	if raw := memberRaw(ms, key); rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

func sameMessageID(a, b *Message) bool {
	ida, _ := a.Field("id")
	idb, _ := b.Field("id")
	return len(ida) > 0 && bytes.Equal(ida, idb) &&
		a.Content.kind == ContentBlocks && b.Content.kind == ContentBlocks
}

func isToolResultMessage(m *Message) bool {
	if m.Role != RoleUser || m.Content.kind != ContentBlocks || len(m.Content.blocks) == 0 {
		return false
	}
	for k := range m.Content.blocks {
		if m.Content.blocks[k].Type != BlockToolResult {
			return false
		}
	}
	return true
}

func allToolResultMessages(ms []Message) bool {
	for k := range ms {
		if !isToolResultMessage(&ms[k]) {
			return false
		}
	}
	return true
}

// mergeResults folds tool-result messages into the first one.
func mergeResults(ms []Message) Message {
	blocks := []Block{}
	for k := range ms {
		blocks = append(blocks, ms[k].Content.blocks...)
	}
	return ms[0].WithContent(BlockList(blocks...))
}

func concatBlocks(a, b []Block) []Block {
	out := make([]Block, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// Encode writes the document in the shape it was read in: a JSON array, the
// request object with its messages replaced, one message per line, or one
// Claude Code record per message (merged records keep the first record's
// envelope; skipped records are not written). Output is compact JSON ending
// in a newline.
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
	e := encoder{buf: dst, mode: modePreserve}
	switch d.Format {
	case FormatJSONL, FormatOpenHands:
		for k := range d.Messages {
			d.Messages[k].encode(&e)
			e.buf = append(e.buf, '\n')
		}
	case FormatClaudeCode:
		for k := range d.Messages {
			encodeRecord(&e, &d.Messages[k])
			e.buf = append(e.buf, '\n')
		}
	case FormatObject:
		e.buf = append(e.buf, '{')
		first := true
		for k := range d.members {
			m := &d.members[k]
			e.key(&first, m, m.key)
			if m.key == "messages" {
				encodeList(&e, d.Messages)
			} else {
				e.raw(m.raw)
			}
		}
		e.buf = append(e.buf, '}', '\n')
	default:
		encodeList(&e, d.Messages)
		e.buf = append(e.buf, '\n')
	}
	return e.buf, e.err
}

func encodeList(e *encoder, msgs []Message) {
	e.buf = append(e.buf, '[')
	for k := range msgs {
		if k > 0 {
			e.buf = append(e.buf, ',')
		}
		msgs[k].encode(e)
	}
	e.buf = append(e.buf, ']')
}

func encodeRecord(e *encoder, m *Message) {
	e.buf = append(e.buf, '{')
	first := true
	if m.env == nil {
		e.key(&first, nil, "type")
		e.str(nil, m.Role)
		e.key(&first, nil, "message")
		m.encode(e)
		e.buf = append(e.buf, '}')
		return
	}
	for k := range m.env.members {
		mb := &m.env.members[k]
		e.key(&first, mb, mb.key)
		if mb.key == "message" {
			e.skipInjected = true
			m.encode(e)
			e.skipInjected = false
		} else {
			e.raw(mb.raw)
		}
	}
	e.buf = append(e.buf, '}')
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

// offsetIn returns the offset of sub within data. sub must be a subslice of
// data that kept data's capacity (the scanner never trims it).
func offsetIn(data, sub []byte) int64 {
	off := cap(data) - cap(sub)
	if off < 0 || off > len(data) {
		return 0
	}
	return int64(off)
}
