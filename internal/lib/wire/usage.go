package wire

import (
	"bytes"
	"math"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/pricing"
)

// API is a provider's wire format; 0 is none (nothing is read).
type API uint8

// The APIs whose answers carry usage.
const (
	// Anthropic is Anthropic's Messages API: a stream's message_start
	// carries the input and cache tokens, message_delta the output tokens
	// (and, on newer models, the input ones again).
	Anthropic API = iota + 1
	// Chat is OpenAI's Chat Completions: the usage is the last chunk of a
	// stream (with stream_options.include_usage), cached tokens counted
	// inside prompt_tokens.
	Chat
	// Responses is OpenAI's Responses API: the usage is in the response of
	// response.completed (or response.incomplete), cached tokens counted
	// inside input_tokens.
	Responses
	// Gemini is Google's Gemini API (generateContent,
	// streamGenerateContent): every response object (a whole answer, each
	// chunk of a stream, SSE or JSON array) carries a usageMetadata, the
	// last one (whose candidate has a finishReason) the output's counts;
	// cached tokens counted inside promptTokenCount.
	Gemini
)

// UsageReader reads the usage of one response: Whole for a JSON answer, or
// Event for each event of a stream, in order. Its zero value is ready.
type UsageReader struct {
	// Usage is the usage read so far.
	Usage pricing.Usage
	// Got reports that some usage was read.
	Got bool
	// Final reports that the event that completes the usage was read
	// (Anthropic's message_delta, the chat usage chunk, Responses'
	// response.completed, Gemini's chunk with a finishReason, a whole
	// answer).
	Final bool
}

// usageKey is in every event with usage (as the key "usage"). Without its
// leading quote, frequent in JSON, bytes.Contains finds it faster.
var usageKey = []byte(`usage"`)

// Gemini's keys: its usage, and the member of a candidate that ends the
// answer.
var (
	usageMetadataKey = []byte(`usageMetadata"`)
	finishReasonKey  = []byte(`finishReason"`)
)

// Event reads the data of one event of a stream of api (for Gemini's JSON
// array stream, one element of the array). Data that is not a JSON
// object, and events without usage, are passed over.
func (r *UsageReader) Event(api API, data []byte) {
	if api == Gemini {
		r.geminiChunk(data)
		return
	}
	// Most events carry no usage: skip them without parsing.
	if !bytes.Contains(data, usageKey) {
		return
	}
	ms, ok := members(data)
	if !ok {
		return
	}
	switch api {
	case Anthropic:
		switch typeOf(ms) {
		case "message_start":
			r.anthropic(rawjson.Get(get(ms, "message"), "usage"))
		case "message_delta":
			r.anthropic(get(ms, "usage"))
			r.Final = true
		}
	case Chat:
		if u := get(ms, "usage"); rawjson.Kind(u) == '{' {
			r.openAI(u, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
			r.Final = true
		}
	case Responses:
		switch typeOf(ms) {
		case "response.completed", "response.incomplete", "response.done":
			r.openAI(rawjson.Get(get(ms, "response"), "usage"), "input_tokens", "output_tokens", "input_tokens_details")
			r.Final = true
		}
	}
}

// Whole reads a whole (non-streamed) JSON answer of api. An answer that is
// not a JSON object is passed over; but for Gemini, a JSON array of
// response objects (a streamGenerateContent answer without alt=sse, read
// whole) is read as its stream is, element by element.
func (r *UsageReader) Whole(api API, body []byte) {
	if api == Gemini && rawjson.Kind(body) == '[' {
		els, err := rawjson.Elements(body)
		if err != nil {
			return
		}
		for _, el := range els {
			r.geminiChunk(el)
		}
		r.Final = true
		return
	}
	ms, ok := members(body)
	if !ok {
		return
	}
	r.Final = true
	u := get(ms, "usage")
	switch api {
	case Anthropic:
		r.anthropic(u)
	case Chat:
		r.openAI(u, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
	case Responses:
		r.openAI(u, "input_tokens", "output_tokens", "input_tokens_details")
	case Gemini:
		r.gemini(get(ms, "usageMetadata"))
	}
}

// geminiChunk reads one response object of a Gemini stream: its
// usageMetadata, which replaces what was read before (the prompt's count
// comes in every chunk, the output's in the last), and Final once a
// candidate has a finishReason.
func (r *UsageReader) geminiChunk(data []byte) {
	hasUsage, hasFinish := bytes.Contains(data, usageMetadataKey), bytes.Contains(data, finishReasonKey)
	if !hasUsage && !hasFinish {
		return // most of a stream: skipped without parsing
	}
	ms, ok := members(data)
	if !ok {
		return
	}
	if hasUsage {
		r.gemini(get(ms, "usageMetadata"))
	}
	if hasFinish && GeminiFinished(get(ms, "candidates")) {
		r.Final = true
	}
}

// GeminiFinished reports whether a Gemini response's candidates (the
// member's raw value) hold one with a finishReason: the answer's last
// chunk.
func GeminiFinished(candidates []byte) bool {
	els, err := rawjson.Elements(candidates)
	if err != nil {
		return false
	}
	for _, c := range els {
		if rawjson.Kind(c) != '{' {
			continue
		}
		if f := rawjson.Get(c, "finishReason"); rawjson.Kind(f) == '"' && len(f) > 2 {
			return true
		}
	}
	return false
}

// gemini reads a Gemini usageMetadata: promptTokenCount (cached tokens
// included) and toolUsePromptTokenCount (the prompts of the built-in
// tools, billed as input), cachedContentTokenCount, candidatesTokenCount
// and thoughtsTokenCount (billed as output). It replaces what was read
// before; an object without the prompt's count is passed over.
func (r *UsageReader) gemini(raw []byte) {
	ms, ok := members(raw)
	if !ok {
		return
	}
	prompt, ok := intOf(get(ms, "promptTokenCount"))
	if !ok {
		return
	}
	tool, _ := intOf(get(ms, "toolUsePromptTokenCount"))
	cached, _ := intOf(get(ms, "cachedContentTokenCount"))
	cand, _ := intOf(get(ms, "candidatesTokenCount"))
	thoughts, _ := intOf(get(ms, "thoughtsTokenCount"))
	r.Usage = pricing.GoogleUsage(prompt+tool, cached, cand, thoughts)
	r.Got = true
}

// anthropic reads a usage object of the Messages API: the fields it has
// replace the ones read before (message_delta's running totals win), the
// others stay.
func (r *UsageReader) anthropic(raw []byte) {
	ms, ok := members(raw)
	if !ok {
		return
	}
	u := r.Usage
	in, read, write, w1h, out := u.Uncached, u.CacheRead, u.CacheWrite(), u.CacheWrite1h, u.Output
	set := func(key string, dst *int) {
		if n, ok := intOf(get(ms, key)); ok {
			*dst = n
			r.Got = true
		}
	}
	set("input_tokens", &in)
	set("cache_read_input_tokens", &read)
	set("cache_creation_input_tokens", &write)
	set("output_tokens", &out)
	// The split by lifetime, where given (message_start; message_delta
	// may repeat the total only).
	if n, ok := intOf(rawjson.Get(get(ms, "cache_creation"), "ephemeral_1h_input_tokens")); ok {
		w1h = n
	}
	r.Usage = pricing.AnthropicUsage(in, read, write, w1h, out)
}

// openAI reads a usage object of Chat Completions or Responses, whose
// input count holds the cached tokens; it replaces what was read before.
// An object without the input count is passed over.
func (r *UsageReader) openAI(raw []byte, inKey, outKey, detailsKey string) {
	ms, ok := members(raw)
	if !ok {
		return
	}
	in, ok := intOf(get(ms, inKey))
	if !ok {
		return
	}
	cached, _ := intOf(rawjson.Get(get(ms, detailsKey), "cached_tokens"))
	out, _ := intOf(get(ms, outKey))
	r.Usage = pricing.OpenAIUsage(in, cached, out)
	r.Got = true
}

// AnthropicUsage reads one usage object of the Messages API, as a
// transcript records it on an assistant message; ok is false when it
// holds no count.
func AnthropicUsage(raw []byte) (u pricing.Usage, ok bool) {
	var r UsageReader
	r.anthropic(raw)
	return r.Usage, r.Got
}

// members splits a JSON object; ok is false for anything else.
func members(raw []byte) ([]rawjson.Member, bool) {
	if rawjson.Kind(raw) != '{' {
		return nil, false
	}
	ms, err := rawjson.Members(raw)
	return ms, err == nil
}

// get returns the value of the last member named key, or nil.
func get(ms []rawjson.Member, key string) []byte {
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].Key == key {
			return ms[k].Value
		}
	}
	return nil
}

// typeOf returns the string value of the member "type", or "".
func typeOf(ms []rawjson.Member) string {
	if v := get(ms, "type"); rawjson.Kind(v) == '"' {
		return rawjson.Unquote(v)
	}
	return ""
}

// maxCount bounds a count read, so that the sum of a usage's counts is an
// int.
const maxCount = math.MaxInt >> 3

// intOf reads a non-negative JSON integer (the integer part of a number
// with a fraction or exponent); ok is false for anything else, and for a
// count too large to be one.
func intOf(raw []byte) (int, bool) {
	if len(raw) == 0 || raw[0] < '0' || raw[0] > '9' {
		return 0, false
	}
	n := 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			break
		}
		if n > maxCount/10 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
