package proxy

import (
	"bytes"

	"github.com/agentctx/agentctx/internal/rawjson"
)

// usageScanner reads the usage and the thinking signatures of a response as
// it is relayed: the data lines of an SSE stream, or a whole JSON answer.
type usageScanner struct {
	line  []byte
	usage Usage
	got   bool
	// write1h is the part of the usage's cache writes with the 1-hour
	// lifetime (Anthropic's cache_creation.ephemeral_1h_input_tokens).
	write1h int
	// final is set once the last event that carries usage was read
	// (Anthropic's message_delta, the chat usage chunk, Responses'
	// response.completed, a whole answer): the usage is then complete.
	final    bool
	thinking []string
	sig      []byte // signature being streamed
	// compaction is the answer's compaction block, whole, once read
	// (Anthropic threshold compaction; native.go); cmp is the one being
	// streamed.
	compaction []byte
	cmp        *streamedCompaction
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

// feed scans a chunk of an SSE stream.
func (sc *usageScanner) feed(p []byte, api API) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(sc.line) < 32<<20 {
				sc.line = append(sc.line, p...)
			}
			return
		}
		sc.line = append(sc.line, p[:i]...)
		p = p[i+1:]
		line := bytes.TrimRight(sc.line, "\r")
		if bytes.HasPrefix(line, []byte("data:")) {
			sc.event(bytes.TrimSpace(line[5:]), api)
		}
		sc.line = sc.line[:0]
	}
}

func (sc *usageScanner) event(data []byte, api API) {
	if rawjson.Kind(data) != '{' || rawjson.Valid(data) != nil {
		return
	}
	switch api {
	case APIAnthropic:
		switch stringOf(rawjson.Get(data, "type")) {
		case "message_start":
			sc.anthropicUsage(rawjson.Get(rawjson.Get(data, "message"), "usage"))
			sc.anthropicContent(rawjson.Get(rawjson.Get(data, "message"), "content"))
		case "message_delta":
			sc.anthropicUsage(rawjson.Get(data, "usage"))
			sc.final = true
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
	case APIChat:
		if u := rawjson.Get(data, "usage"); rawjson.Kind(u) == '{' {
			sc.chatUsage(u)
			sc.final = true
		}
	case APIResponses:
		switch stringOf(rawjson.Get(data, "type")) {
		case "response.completed", "response.incomplete", "response.done":
			sc.responsesUsage(rawjson.Get(rawjson.Get(data, "response"), "usage"))
			sc.final = true
		}
	}
}

// whole reads a non-streamed JSON answer.
func (sc *usageScanner) whole(data []byte, api API) {
	if rawjson.Kind(data) != '{' {
		return
	}
	sc.final = true
	switch api {
	case APIAnthropic:
		sc.anthropicUsage(rawjson.Get(data, "usage"))
		sc.anthropicContent(rawjson.Get(data, "content"))
	case APIChat:
		sc.chatUsage(rawjson.Get(data, "usage"))
	case APIResponses:
		sc.responsesUsage(rawjson.Get(data, "usage"))
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
	}
}

func intOf(raw []byte) (int, bool) {
	if len(raw) == 0 || raw[0] < '0' || raw[0] > '9' {
		return 0, false
	}
	n := 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func (sc *usageScanner) anthropicUsage(u []byte) {
	if rawjson.Kind(u) != '{' {
		return
	}
	set := func(key string, dst *int) {
		if n, ok := intOf(rawjson.Get(u, key)); ok {
			*dst = n
			sc.got = true
		}
	}
	set("input_tokens", &sc.usage.InputTokens)
	set("output_tokens", &sc.usage.OutputTokens)
	set("cache_read_input_tokens", &sc.usage.CacheReadInputTokens)
	set("cache_creation_input_tokens", &sc.usage.CacheCreationInputTokens)
	// The split by lifetime, where given (message_start; message_delta
	// may repeat the total only).
	if n, ok := intOf(rawjson.Get(rawjson.Get(u, "cache_creation"), "ephemeral_1h_input_tokens")); ok {
		sc.write1h = n
	}
}

func (sc *usageScanner) chatUsage(u []byte) {
	if rawjson.Kind(u) != '{' {
		return
	}
	in, ok := intOf(rawjson.Get(u, "prompt_tokens"))
	if !ok {
		return
	}
	cached, _ := intOf(rawjson.Get(rawjson.Get(u, "prompt_tokens_details"), "cached_tokens"))
	out, _ := intOf(rawjson.Get(u, "completion_tokens"))
	sc.usage = Usage{InputTokens: in - cached, CacheReadInputTokens: cached, OutputTokens: out}
	sc.got = true
}

func (sc *usageScanner) responsesUsage(u []byte) {
	if rawjson.Kind(u) != '{' {
		return
	}
	in, ok := intOf(rawjson.Get(u, "input_tokens"))
	if !ok {
		return
	}
	cached, _ := intOf(rawjson.Get(rawjson.Get(u, "input_tokens_details"), "cached_tokens"))
	out, _ := intOf(rawjson.Get(u, "output_tokens"))
	sc.usage = Usage{InputTokens: in - cached, CacheReadInputTokens: cached, OutputTokens: out}
	sc.got = true
}
