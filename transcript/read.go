// Package transcript reads and writes back the files agents keep their
// conversations in: Claude Code sessions, OpenHands evaluation output,
// SWE-agent and mini-swe-agent trajectories. It reads them into the
// agentctx.Document every part of agentctx works on, and Encode writes
// them back in their own shape, every record that is not a message kept.
//
//	doc, err := transcript.ReadFile(ctx, "session.jsonl", os.Stdin)
//	if err != nil {
//		return err // an *agentctx.InputError names the line and column
//	}
//	fmt.Fprintln(os.Stderr, doc.Notice()) // what was skipped, if anything
//
// ParseDocument detects the shape of its input from its content (Formats
// lists them with an example each) and reads the request formats
// (agentctx.ParseDocument: a JSON array of messages, a request body, JSON
// Lines of messages) as well, so a command that reads "a transcript" reads
// any of them. agentctx.ParseDocument reads only the request formats: the
// proxy and the SDK middleware, which decode request bodies, never take an
// agent's file for one.
//
//   - A Claude Code session .jsonl: assistant records that share a message
//     id become one message, and the tool results written between them are
//     gathered into the next message; a subagent's sidechain file is a
//     conversation of its own; a compacted session is read from its last
//     compact boundary on unless ReadOptions.WholeHistory is set. Encode
//     writes the file back whole: records that are not messages where they
//     were, an unchanged message as its records byte for byte, a changed
//     one in its first record, new ones as new records, parentUuid links
//     kept.
//   - An OpenHands output.jsonl (records whose "history" holds events) is
//     imported as OpenAI chat messages, one conversation per record
//     (Document.Conversations), and written back per record.
//   - A SWE-agent trajectory (an object whose "history" holds messages) and
//     a mini-swe-agent trajectory (an object with "messages" and its marks;
//     its role "exit" message is kept in the file, not sent) are written
//     back as the same object with the list replaced.
package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/fsutil"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// The agent transcript formats (SPEC §1). Formats lists them, and the
// request formats of package agentctx, with how each is recognised and an
// example.
const (
	// FormatMiniSWEAgent is a mini-swe-agent trajectory (.traj.json): an
	// object with "messages" (OpenAI chat messages with an "extra" member)
	// and "info", "trajectory_format". Its final role "exit" message is
	// kept in the file but is not a model message (see Document.NonModel).
	FormatMiniSWEAgent agentctx.Format = "mini-swe-agent"
	// FormatSWEAgent is a SWE-agent trajectory (.traj) and the same shape
	// written by other harnesses: an object whose "history" holds the
	// OpenAI chat messages sent to the model (tool messages name their call
	// in a "tool_call_ids" list), beside "trajectory", "info" and more,
	// which are kept.
	FormatSWEAgent agentctx.Format = "swe-agent"
	// FormatClaudeCode is a Claude Code session .jsonl: records of type
	// "user" and "assistant" carry a message and a timestamp; assistant
	// records that share message.id are one message; other records are
	// skipped and counted by kind. A subagent's session (every record
	// isSidechain) is a conversation of its own. In a session Claude Code
	// compacted, the live context starts at the last compact_boundary
	// record (see ReadOptions.WholeHistory and Document.Boundaries).
	FormatClaudeCode agentctx.Format = "claude-code"
	// FormatOpenHands is an OpenHands evaluation output (output.jsonl: one
	// record per instance, its events in "history"), or a JSON array of
	// OpenHands events. The events are imported as OpenAI chat messages,
	// one conversation per record (see Document.Conversations). Encode
	// writes each conversation back as its record (WithConversations sets
	// their messages): unchanged messages as their events, a changed tool
	// result in its observation, new messages as new events; a document
	// whose messages were set as one list (WithMessages on several
	// conversations) is written as JSON Lines of messages.
	// Records whose "history" holds messages rather than events (SWE-agent
	// trajectories, one per line) are read the same way, their messages
	// as they are.
	FormatOpenHands agentctx.Format = "openhands"
)

// ReadOptions configure how a document is read. The zero value reads the
// live context of a Claude Code session; the functions ReadFile,
// ReadDocument and ParseDocument use it.
type ReadOptions struct {
	// WholeHistory reads the whole history of a Claude Code session that
	// Claude Code compacted: the messages before its compact boundaries
	// too, and every continuation summary. By default only the live
	// context is read: from the last compact_boundary record on, starting
	// with the summary Claude Code continued from. Document.Boundaries
	// lists the boundaries either way.
	WholeHistory bool
}

// ReadFile reads a document from a file; path "-" or "" reads stdin.
func ReadFile(ctx context.Context, path string, stdin io.Reader) (*agentctx.Document, error) {
	return ReadOptions{}.ReadFile(ctx, path, stdin)
}

// ReadDocument reads a whole document from r and detects its format from
// its content (see Formats): an agent transcript (a Claude Code session,
// an OpenHands evaluation output, a SWE-agent or mini-swe-agent
// trajectory) or a request format (a JSON array of messages, a request
// body, JSON Lines of messages: agentctx.ParseDocument). Malformed input
// returns an *agentctx.InputError naming the line, column and byte offset
// (errors.Is(err, agentctx.ErrInvalidInput)). Reading stops early if ctx
// is cancelled. A document read without error may still hold no message
// or have records skipped: see Document.Notice.
func ReadDocument(ctx context.Context, r io.Reader) (*agentctx.Document, error) {
	return ReadOptions{}.ReadDocument(ctx, r)
}

// ParseDocument parses a document held in memory (see ReadDocument). The
// result shares memory with data, which must not be modified afterwards.
func ParseDocument(ctx context.Context, data []byte) (*agentctx.Document, error) {
	return ReadOptions{}.ParseDocument(ctx, data)
}

// ReadFile is ReadFile with these options.
func (o ReadOptions) ReadFile(ctx context.Context, path string, stdin io.Reader) (*agentctx.Document, error) {
	if path == "" || path == "-" {
		return o.ReadDocument(ctx, stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return o.ReadDocument(ctx, f)
}

// ReadDocument is ReadDocument with these options.
func (o ReadOptions) ReadDocument(ctx context.Context, r io.Reader) (*agentctx.Document, error) {
	data, err := fsutil.ReadAll(ctx, r)
	if err != nil {
		return nil, err
	}
	return o.ParseDocument(ctx, data)
}

// ParseDocument is ParseDocument with these options.
func (o ReadOptions) ParseDocument(ctx context.Context, data []byte) (*agentctx.Document, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	i := rawjson.SkipSpace(data, 0)
	if i == len(data) {
		return agentctx.ParseDocument(ctx, data) // its error
	}
	switch data[i] {
	case '[':
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
			conv, err := importOpenHands(data, events, func(k int) int64 { return rawjson.Offset(data, elems[k]) })
			if err != nil {
				return nil, err
			}
			return conv.document(), nil
		}
		return agentctx.ParseDocument(ctx, data)
	case '{':
		end, err := rawjson.ValueEnd(data, i)
		if err != nil {
			return nil, syntaxError(data, err)
		}
		if rawjson.SkipSpace(data, end) == len(data) {
			ms, _ := rawjson.Members(data[i:end])
			switch f := objectFormat(ms); f {
			case agentctx.FormatObject:
				return agentctx.ParseDocument(ctx, data)
			case FormatMiniSWEAgent:
				return agentctx.ParseObject(data, "messages", f)
			case FormatSWEAgent:
				return agentctx.ParseObject(data, "history", f)
			}
		}
		return o.parseLines(ctx, data)
	}
	return agentctx.ParseDocument(ctx, data) // its error
}

// objectFormat tells the shape of a top-level object that holds a list of
// messages, from its content, or returns "" (JSON Lines of one value).
func objectFormat(ms []rawjson.Member) agentctx.Format {
	if findRaw(ms, "role") != nil {
		return "" // a single message
	}
	if msgs := findRaw(ms, "messages"); msgs != nil {
		if isMiniSWEAgent(ms, msgs) {
			return FormatMiniSWEAgent
		}
		return agentctx.FormatObject
	}
	h := findRaw(ms, "history")
	if rawjson.Kind(h) != '[' {
		return ""
	}
	if isMessages(h) || bytes.Equal(bytes.TrimSpace(h[1:len(h)-1]), nil) && (findRaw(ms, "trajectory") != nil || findRaw(ms, "replay_config") != nil) {
		return FormatSWEAgent
	}
	return "" // an OpenHands record
}

// isMiniSWEAgent reports whether an object with "messages" is a
// mini-swe-agent trajectory: its trajectory_format names it, its info has
// mini_version, or a message has role "exit".
func isMiniSWEAgent(ms []rawjson.Member, msgs []byte) bool {
	if tf := findRaw(ms, "trajectory_format"); rawjson.Kind(tf) == '"' && strings.HasPrefix(rawjson.Unquote(tf), "mini-swe-agent") {
		return true
	}
	if info, err := rawjson.Members(findRaw(ms, "info")); err == nil && findRaw(info, "mini_version") != nil {
		return true
	}
	elems, _ := rawjson.Elements(msgs)
	for _, el := range elems {
		if em, err := rawjson.Members(el); err == nil {
			if r := findRaw(em, "role"); rawjson.Kind(r) == '"' && rawjson.Unquote(r) == "exit" {
				return true
			}
		}
	}
	return false
}

// lineKind is what one value of a JSON Lines input looks like.
type lineKind int

const (
	lineOther     lineKind = iota
	lineMessage            // has a role
	lineRecord             // a Claude Code record: a type and no role
	lineOpenHands          // an OpenHands record: a history of events
)

func classifyLine(ms []rawjson.Member) lineKind {
	switch {
	case findRaw(ms, "role") != nil:
		return lineMessage
	case isOpenHandsRecord(ms):
		return lineOpenHands
	case rawjson.Kind(findRaw(ms, "type")) == '"':
		return lineRecord
	}
	return lineOther
}

// parseLines reads a sequence of JSON objects (JSON Lines): messages,
// Claude Code records or OpenHands records, whichever most of the values
// are (the first value breaks a tie).
func (o ReadOptions) parseLines(ctx context.Context, data []byte) (*agentctx.Document, error) {
	values, scans, partial, err := rawjson.Lines(ctx, data)
	if err != nil {
		if err == ctx.Err() {
			return nil, err
		}
		return nil, syntaxError(data, err)
	}
	kinds := make([]lineKind, len(values))
	var count [4]int
	for k, ms := range scans {
		kinds[k] = classifyLine(ms)
		count[kinds[k]]++
	}
	best := kinds[0]
	for k := lineMessage; k <= lineOpenHands; k++ {
		if count[k] > count[best] {
			best = k
		}
	}
	var doc *agentctx.Document
	switch best {
	case lineOpenHands:
		doc, err = parseOpenHands(data, values)
	case lineRecord:
		doc, err = o.parseClaudeCode(data, values, scans)
	default:
		for k, v := range values {
			if kinds[k] != lineMessage {
				return nil, agentctx.InputErrorAt(data, rawjson.Offset(data, v), "object has no \"role\": not a message")
			}
		}
		// JSON Lines of messages: agentctx reads them, an incomplete last
		// line included.
		return agentctx.ParseDocument(ctx, data)
	}
	if err != nil {
		return nil, err
	}
	doc.PartialLine = partial
	return doc, nil
}

// syntaxError turns a scanner error into an *agentctx.InputError; offsets
// of rawjson.SyntaxError are relative to the slice that was scanned, which
// for every caller here starts at data's start or is a subslice of it.
func syntaxError(data []byte, err error) error {
	var se *rawjson.SyntaxError
	if errors.As(err, &se) {
		return agentctx.InputErrorAt(data, se.Offset, se.Msg)
	}
	return &agentctx.InputError{Msg: err.Error()}
}

// lineAt returns the 1-based line of sub in data.
func lineAt(data, sub []byte) int {
	return bytes.Count(data[:rawjson.Offset(data, sub)], []byte{'\n'}) + 1
}

// findRaw returns the value of the last member with the key, or nil.
func findRaw(ms []rawjson.Member, key string) []byte {
	if m := findMember(ms, key); m != nil {
		return m.Value
	}
	return nil
}

// findMember returns the last member with the key, or nil.
func findMember(ms []rawjson.Member, key string) *rawjson.Member {
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].Key == key {
			return &ms[k]
		}
	}
	return nil
}

// recordString returns the string member key of a record, or "".
func recordString(ms []rawjson.Member, key string) string {
	if raw := findRaw(ms, key); rawjson.Kind(raw) == '"' {
		return rawjson.Unquote(raw)
	}
	return ""
}

// objectHasKey reports whether a JSON object has a member with the key.
func objectHasKey(obj []byte, key string) bool {
	ms, err := rawjson.Members(obj)
	return err == nil && findRaw(ms, key) != nil
}

// skip counts one skipped record of a kind.
func skip(d *agentctx.Document, kind string) {
	d.Skipped++
	if d.SkippedKinds == nil {
		d.SkippedKinds = map[string]int{}
	}
	d.SkippedKinds[kind]++
}
