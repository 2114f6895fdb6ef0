package proxy

import (
	"bytes"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/anthropic"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// usageScanner reads the usage and the thinking signatures of a response as
// it is relayed: the events of an SSE stream (wire.SSE), the elements of a
// JSON array streamed element by element (wire.JSONArray, with array:
// Gemini's stream without alt=sse), or a whole JSON answer. The usage is read by the answer's family (into a
// wire.UsageReader); what is the proxy's own (thinking signatures,
// Anthropic's compaction blocks) is read here. A nil family reads nothing.
type usageScanner struct {
	sse    wire.SSE
	reader wire.UsageReader
	fam    family.Family
	emit   func(wire.Event)
	// array: the stream is a JSON array, read by arr (emitEl its
	// callback), each element an event.
	array  bool
	arr    wire.JSONArray
	emitEl func([]byte)

	usage pricing.Usage
	got   bool
	// final is set once the last event that carries usage was read
	// (Anthropic's message_delta, the chat usage chunk, Responses'
	// response.completed, a whole answer): the usage is then complete.
	final bool
	// done is set once the answer's terminal event was read (Anthropic's
	// message_stop, the chat stream's [DONE], Responses'
	// response.completed, response.incomplete or response.done), or a
	// whole JSON answer: the upstream answered whole, whatever cuts the
	// connection after.
	done     bool
	thinking []string
	sig      []byte // signature being streamed
	// compaction is the answer's compaction block, whole, once read
	// (Anthropic threshold compaction; native.go); cmp is the one being
	// streamed.
	compaction []byte
	cmp        *streamedCompaction
	// toolUse is set once the answer (Anthropic) calls a tool.
	toolUse bool
}

// streamedCompaction is a compaction block being streamed: its
// compaction_delta events carry content and encrypted_content.
type streamedCompaction struct{ content, encrypted []byte }

// block returns the block as the API would have sent it whole.
func (c *streamedCompaction) block() []byte {
	b := []byte(`{"type":"compaction","content":`)
	b = rawjson.AppendString(b, string(c.content))
	if len(c.encrypted) > 0 {
		b = append(b, `,"encrypted_content":`...)
		b = rawjson.AppendString(b, string(c.encrypted))
	}
	return append(b, '}')
}

// feed scans a chunk of a stream of fam (SSE, or a JSON array).
func (sc *usageScanner) feed(p []byte, fam family.Family) {
	sc.init(fam)
	if sc.array {
		sc.arr.Feed(p, sc.emitEl)
		return
	}
	sc.sse.Feed(p, sc.emit)
}

// end scans what is left at the end of the stream (an event its empty
// line did not end, an element cut short).
func (sc *usageScanner) end(fam family.Family) {
	sc.init(fam)
	if sc.array {
		sc.arr.End(sc.emitEl)
		return
	}
	sc.sse.End(sc.emit)
}

func (sc *usageScanner) init(fam family.Family) {
	if sc.emit == nil {
		sc.emit = sc.event
		sc.emitEl = func(el []byte) { sc.event(wire.Event{Data: el}) }
	}
	sc.fam = fam
}

func (sc *usageScanner) event(e wire.Event) {
	if sc.fam == nil {
		return
	}
	sc.fam.ReadEvent(&sc.reader, e.Data)
	sc.sync()
	if !sc.done {
		sc.done = sc.fam.Terminal(e.Data, sc.final)
	}
	if !isAnthropic(sc.fam) || !watched(e.Data) || rawjson.Kind(e.Data) != '{' || rawjson.Valid(e.Data) != nil {
		return
	}
	data := e.Data
	switch stringOf(rawjson.Get(data, "type")) {
	case "message_start":
		sc.anthropicContent(rawjson.Get(rawjson.Get(data, "message"), "content"))
	case "content_block_start":
		cb := rawjson.Get(data, "content_block")
		if stringOf(rawjson.Get(cb, "type")) == "compaction" {
			sc.cmp = &streamedCompaction{content: []byte(stringOf(rawjson.Get(cb, "content")))}
			break
		}
		sc.anthropicBlock(cb)
	case "content_block_delta":
		d := rawjson.Get(data, "delta")
		switch stringOf(rawjson.Get(d, "type")) {
		case "signature_delta":
			sc.sig = append(sc.sig, stringOf(rawjson.Get(d, "signature"))...)
		case "compaction_delta":
			if sc.cmp != nil {
				sc.cmp.content = append(sc.cmp.content, stringOf(rawjson.Get(d, "content"))...)
				sc.cmp.encrypted = append(sc.cmp.encrypted, stringOf(rawjson.Get(d, "encrypted_content"))...)
			}
		}
	case "content_block_stop":
		if sc.cmp != nil {
			sc.compaction = sc.cmp.block()
			sc.cmp = nil
		}
		if len(sc.sig) > 0 {
			sc.thinking = append(sc.thinking, string(sc.sig))
			sc.sig = sc.sig[:0]
		}
	}
}

// isAnthropic reports the Anthropic family, whose answers' content (its
// thinking signatures, compaction blocks, tool calls) the proxy reads
// besides their usage.
func isAnthropic(f family.Family) bool {
	_, ok := f.(anthropic.Family)
	return ok
}

// watched reports whether an Anthropic event may be one the proxy reads
// besides its usage (message_start's content, a content block's start and
// stop, a signature or compaction delta): the others, most of a stream
// (its text deltas), are passed over unparsed. The API writes the event's
// type first; data written otherwise is parsed.
func watched(data []byte) bool {
	const prefix = `{"type":"`
	rest, ok := bytes.CutPrefix(data, []byte(prefix))
	if !ok {
		return true
	}
	switch {
	case bytes.HasPrefix(rest, []byte(`content_block_delta"`)):
		return bytes.Contains(rest, []byte(`signature_delta"`)) || bytes.Contains(rest, []byte(`compaction_delta"`))
	case bytes.HasPrefix(rest, []byte(`message_start"`)), bytes.HasPrefix(rest, []byte(`content_block_start"`)),
		bytes.HasPrefix(rest, []byte(`content_block_stop"`)):
		return true
	}
	// Another type (ping, message_delta, message_stop, error), unless
	// the type is not a plain string.
	i := bytes.IndexByte(rest, '"')
	return i < 0 || bytes.IndexByte(rest[:i], '\\') >= 0
}

// sync takes the wire reader's usage.
func (sc *usageScanner) sync() {
	sc.usage, sc.got, sc.final = sc.reader.Usage, sc.reader.Got, sc.reader.Final
}

// whole reads a non-streamed JSON answer of fam.
func (sc *usageScanner) whole(data []byte, fam family.Family) {
	if fam != nil {
		fam.ReadWhole(&sc.reader, data)
	} else {
		sc.reader.Whole(0, data) // none: a JSON object is final, its usage unread
	}
	sc.sync()
	sc.done = sc.final // a JSON object, read whole
	if isAnthropic(fam) && rawjson.Kind(data) == '{' {
		sc.anthropicContent(rawjson.Get(data, "content"))
	}
}

func (sc *usageScanner) anthropicContent(content []byte) {
	els, err := rawjson.Elements(content)
	if err != nil {
		return
	}
	for _, el := range els {
		sc.anthropicBlock(el)
	}
}

func (sc *usageScanner) anthropicBlock(b []byte) {
	switch stringOf(rawjson.Get(b, "type")) {
	case "thinking":
		if s := stringOf(rawjson.Get(b, "signature")); s != "" {
			sc.thinking = append(sc.thinking, s)
		}
	case "redacted_thinking":
		if s := stringOf(rawjson.Get(b, "data")); s != "" {
			sc.thinking = append(sc.thinking, s)
		}
	case "compaction":
		sc.compaction = append([]byte(nil), b...)
	case "tool_use":
		sc.toolUse = true
	}
}
