package proxy

import (
	"bytes"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// usageScanner reads the usage and the thinking signatures of a response as
// it is relayed: the events of an SSE stream (wire.SSE), or a whole JSON
// answer. The usage is read by wire.UsageReader; what is the proxy's own
// (thinking signatures, Anthropic's compaction blocks) is read here.
type usageScanner struct {
	sse    wire.SSE
	reader wire.UsageReader
	api    API
	emit   func(wire.Event)

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

// wireAPI returns the wire format of an API, 0 for none.
func wireAPI(api API) wire.API {
	switch api {
	case APIAnthropic:
		return wire.Anthropic
	case APIChat:
		return wire.Chat
	case APIResponses:
		return wire.Responses
	}
	return 0
}

// feed scans a chunk of an SSE stream.
func (sc *usageScanner) feed(p []byte, api API) {
	if sc.emit == nil {
		sc.emit = sc.event
	}
	sc.api = api
	sc.sse.Feed(p, sc.emit)
}

// end scans what is left at the end of the stream (an event its empty
// line did not end).
func (sc *usageScanner) end(api API) {
	if sc.emit == nil {
		sc.emit = sc.event
	}
	sc.api = api
	sc.sse.End(sc.emit)
}

func (sc *usageScanner) event(e wire.Event) {
	sc.reader.Event(wireAPI(sc.api), e.Data)
	sc.sync()
	if !sc.done {
		sc.done = terminal(sc.api, e.Data, sc.final)
	}
	if sc.api != APIAnthropic || !watched(e.Data) || rawjson.Kind(e.Data) != '{' || rawjson.Valid(e.Data) != nil {
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

// terminal reports whether an event of api, whose data is data, ends
// the answer: Anthropic's message_stop, the chat stream's [DONE], or (final
// set) the Responses event that carries the usage, which is its last.
func terminal(api API, data []byte, final bool) bool {
	switch api {
	case APIAnthropic:
		// The API writes {"type":"message_stop"}; the test finds it
		// without parsing the other events.
		return bytes.Contains(data, []byte(`message_stop"`)) && rawjson.Kind(data) == '{' && rawjson.Valid(data) == nil &&
			stringOf(rawjson.Get(data, "type")) == "message_stop"
	case APIChat:
		return bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]"))
	case APIResponses:
		return final
	}
	return false
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

// whole reads a non-streamed JSON answer.
func (sc *usageScanner) whole(data []byte, api API) {
	sc.reader.Whole(wireAPI(api), data)
	sc.sync()
	sc.done = sc.final // a JSON object, read whole
	if api == APIAnthropic && rawjson.Kind(data) == '{' {
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
