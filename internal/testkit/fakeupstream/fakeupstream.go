// Package fakeupstream is a strict fake of the Anthropic, OpenAI and
// Gemini APIs for tests: it speaks the real wire formats (Anthropic
// Messages with SSE: text, tool_use with input_json_delta, thinking with
// signature_delta, ping, error; OpenAI chat chunks with the final usage
// chunk; Responses events; Gemini generateContent, streamGenerateContent
// as SSE or a JSON array, countTokens) and rejects, with the API's 400,
// what the real APIs reject: unpaired tool calls, more than 4
// cache_control breakpoints, a changed prefix before a signed thinking
// block, a Gemini 3 function call without its thought signature, and a
// request over its context window. A Script decides what the "model"
// answers, so a test can make it call tools.
//
// The fake bills like the real APIs: it counts each block of a request
// (o200k_base), runs the request through a pricing.Cache per API key and
// model (Gemini's implicit caching included), reports that usage in its
// answers (cache reads and writes included), and keeps the bill
// (Server.Bill, and GET /_fake/bill for a harness in another process).
package fakeupstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctx/agentctx/pricing"
)

// Wire formats.
const (
	APIAnthropic = "anthropic"
	APIChat      = "openai-chat"
	APIResponses = "openai-responses"
	APIGemini    = "gemini" // Google's Gemini API (gemini.go)
)

// Call is one model request as the script sees it.
type Call struct {
	API    string
	Path   string
	Header http.Header
	Model  string
	Body   map[string]any
	Raw    []byte
	// ToolNames are the names of the tools the request offers.
	ToolNames []string
	// Results are the texts of the tool results since the last assistant
	// turn, oldest first; AllText is every text of the request, joined.
	Results []string
	AllText string
	// Turn counts the assistant turns already in the history.
	Turn int
	// Stream reports a streaming request.
	Stream bool
	// Edited is the body after the server-side context_management edits
	// (what the model reads and what is billed), Applied those edits; nil
	// without edits.
	Edited  map[string]any
	Applied []AppliedEdit
	// Compaction is the compaction item a Responses request's
	// context_management threshold produced (responsescompact.go): the
	// answer's first output item; nil without one.
	Compaction     map[string]any
	respCompaction bool // a Responses compaction pass: counted in Totals.Compactions
	// Summary is the summary of the Anthropic threshold compaction the
	// request triggered (compaction.go), "" when none ran.
	Summary    string
	compaction *compaction
	compUsage  pricing.Usage
	// key is the request's API key, where the headers apiKey reads do
	// not carry it (Gemini's key= query parameter).
	key string
}

// ToolCall is a call the model makes.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Reply is what the model answers.
type Reply struct {
	Thinking  string // a signed thinking block first (Anthropic)
	Text      string
	ToolCalls []ToolCall
	// Error, when set, ends an Anthropic stream with an error event after
	// message_start.
	Error string
	// InputTokens, when set, is the usage reported and billed: that many
	// uncached input tokens, nothing read from or written to the cache,
	// and 10 output tokens (or OutputTokens). Zero reports the prompt
	// cache's usage (see Server.Bill).
	InputTokens int
	// OutputTokens overrides the output tokens, counted from the reply's
	// thinking, text and tool calls when zero.
	OutputTokens int
	// Truncated reports a reply cut at the request's max_tokens (Anthropic
	// stop_reason "max_tokens").
	Truncated bool
}

// minScriptTokens is the least max_tokens an Anthropic request needs for
// the script to answer it: below it the model's answer is cut at once, so
// the fake answers with max_tokens tokens of text, stop_reason
// "max_tokens", without asking the script (a real model keeps no state
// between requests, the script does; a request that only refreshes the
// prompt cache must not move it on).
const minScriptTokens = 8

// Options configure a Server. The zero value answers "ok" to everything,
// with a 200,000-token context window, and bills at the default prices.
type Options struct {
	// Script answers each accepted request; nil answers "ok".
	Script func(c *Call) Reply
	// ContextWindow is the window in tokens, estimated as a quarter of the
	// body's bytes; 0 means 200,000.
	ContextWindow int
	// Now is the clock of the prompt caches' lifetimes; nil means
	// time.Now.
	Now func() time.Time
	// Prices are the prices and prompt-cache parameters of each model; nil
	// means pricing.Default(). A model the table does not know is billed
	// at pricing.Fallback of its API's provider.
	Prices pricing.Table
	// GeminiPrices are the Gemini models' prices (gemini.go), which
	// pricing does not have yet; a nil Short table means
	// DefaultGeminiPricing().
	GeminiPrices GeminiPricing
}

// Record is one request the fake received.
type Record struct {
	Method, Path string
	// Header holds the request's headers.
	Header http.Header
	API    string
	Size   int
	Body   []byte
	// Rejected is the reason for a 400, or "".
	Rejected string
}

// Server is the fake upstream, an http.Handler.
type Server struct {
	opts Options
	seq  atomic.Int64

	mu      sync.Mutex
	records []Record

	billing billing
	// thought holds the ids of the tool calls the fake made in a reply
	// that started with thinking (see checkFinalThinking).
	thought sync.Map
	// geminiSigs holds the thought signatures the fake issued on Gemini
	// answers, each with the part it was issued on (gemini.go).
	geminiSigs sync.Map
	// geminiWindow is the Gemini models' context window: ContextWindow
	// when set, else GeminiContextWindow.
	geminiWindow int
}

// New returns a Server.
func New(opts Options) *Server {
	geminiWindow := opts.ContextWindow
	if geminiWindow <= 0 {
		geminiWindow = GeminiContextWindow
	}
	if opts.GeminiPrices.Short == nil {
		opts.GeminiPrices = DefaultGeminiPricing()
	}
	if opts.ContextWindow <= 0 {
		opts.ContextWindow = 200_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Prices == nil {
		opts.Prices = pricing.Default()
	}
	return &Server{opts: opts, geminiWindow: geminiWindow, billing: billing{caches: map[string]*pricing.Cache{}, sessions: map[string]Totals{}}}
}

// Records returns the requests received so far.
func (s *Server) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

func (s *Server) record(r Record) {
	s.mu.Lock()
	s.records = append(s.records, r)
	s.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api, ok := s.route(w, r)
	if !ok {
		return
	}
	path := r.URL.Path
	raw := readBody(r)
	rec := Record{Method: r.Method, Path: path, Header: r.Header.Clone(), API: api, Size: len(raw), Body: raw}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		rec.Rejected = "invalid JSON: " + err.Error()
	} else if reason := s.check(api, r.Header, body, len(raw)); reason != "" {
		rec.Rejected = reason
	}
	var edited map[string]any
	var applied []AppliedEdit
	if rec.Rejected == "" && api == APIAnthropic {
		edited, applied = applyContextManagement(body)
		rec.Rejected = s.checkEditedWindow(body, edited, len(raw))
	}
	s.record(rec)
	if rec.Rejected != "" {
		s.reject(r.Header, body)
		writeErr(w, api, http.StatusBadRequest, "invalid_request_error", rec.Rejected)
		return
	}
	c := s.call(api, r, body, raw)
	if api == APIAnthropic {
		s.countThinking(r.Header, body)
		c.Edited, c.Applied = edited, applied
		read := body
		if c.Edited != nil {
			read = c.Edited
		}

		if c.compaction = compact(read); c.compaction != nil {
			c.Summary = c.compaction.Summary
		}
	}
	reply := s.reply(api, c, body)
	u := s.usage(c, reply)
	switch api {
	case APIAnthropic:
		s.anthropic(w, c, reply, u)
	case APIChat:
		s.chat(w, c, reply, u)
	default:
		s.responses(w, c, reply, u)
	}
}

// route returns the API a model request to r is for, or answers r itself
// (Gemini, compaction, bill, token count, models, HEAD, no route) and
// returns false.
func (s *Server) route(w http.ResponseWriter, r *http.Request) (api string, ok bool) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		api = APIAnthropic
	case r.Method == http.MethodPost && path == "/v1/chat/completions":
		api = APIChat
	case r.Method == http.MethodPost && path == "/v1/responses":
		api = APIResponses
	case r.Method == http.MethodPost && isGeminiPath(path):
		s.serveGemini(w, r)
		return "", false
	case r.Method == http.MethodPost && path == CompactPath:
		s.serveCompact(w, r)
		return "", false
	case path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":42}`)
		s.record(Record{Method: r.Method, Path: path})
		return "", false
	case r.Method == http.MethodGet && path == BillPath:
		s.serveBill(w)
		return "", false
	case r.Method == http.MethodGet && path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"id":"fake-model","type":"model"}],"object":"list"}`)
		s.record(Record{Method: r.Method, Path: path})
		return "", false
	default:
		s.record(Record{Method: r.Method, Path: path})
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return "", false
		}
		writeErr(w, api, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+path)
		return "", false
	}
	return api, true
}

// reply returns the reply to call c of api: "ok", nothing after a paused
// compaction, or the script's. For the Responses API it first runs the
// threshold compaction (c.Compaction), whose output is billed with the
// reply.
func (s *Server) reply(api string, c *Call, body map[string]any) Reply {
	var compactTokens int
	if api == APIResponses {
		c.Compaction, compactTokens = s.thresholdCompaction(body)
		c.respCompaction = c.Compaction != nil
	}
	reply := Reply{Text: "ok"}
	mt, _ := body["max_tokens"].(float64)
	switch {
	case c.compaction != nil && c.compaction.Paused:
		reply = Reply{} // the answer stops after the compaction block
	case api == APIAnthropic && mt >= 1 && mt < minScriptTokens:
		reply = Reply{Text: "I", OutputTokens: int(mt), Truncated: true}
	case s.opts.Script != nil:
		reply = s.opts.Script(c)
	}
	if compactTokens > 0 {
		// The compaction pass's output is billed with the answer's.
		if reply.OutputTokens == 0 {
			reply.OutputTokens = outputTokens(reply)
		}
		reply.OutputTokens += compactTokens
	}
	return reply
}

func readBody(r *http.Request) []byte {
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return []byte(b.String())
		}
	}
}

func writeErr(w http.ResponseWriter, api string, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var v any
	if api == APIAnthropic || api == "" {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		v = map[string]any{"error": map[string]any{"type": typ, "message": msg, "code": nil}}
	}
	json.NewEncoder(w).Encode(v)
}

// check applies the rules of the real API.
func (s *Server) check(api string, header http.Header, body map[string]any, size int) string {
	if size/4 > s.opts.ContextWindow && (api != APIAnthropic || body["context_management"] == nil) {
		// With context management, the window is the edited prompt's
		// (checked after the edits, contextmgmt.go).
		return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", size/4, s.opts.ContextWindow)
	}
	switch api {
	case APIAnthropic:
		msgs, _ := body["messages"].([]any)
		if r := anthropicPairing(msgs); r != "" {
			return r
		}
		if n := countCacheControl(body["system"]) + countCacheControl(body["tools"]) + countCacheControl(body["messages"]); n > 4 {
			return fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", n)
		}
		if r := checkTTLOrder(body); r != "" {
			return r
		}
		if r := checkContextManagement(header, body); r != "" {
			return r
		}
		if r := checkCompactionBlocks(body); r != "" {
			return r
		}
		if r := s.checkFinalThinking(body); r != "" {
			return r
		}
		if r := checkThinking(header, body); r != "" {
			return r
		}
	case APIChat:
		msgs, _ := body["messages"].([]any)
		return chatPairing(msgs)
	case APIResponses:
		if _, r := checkContextManagementResponses(body); r != "" {
			return r
		}
		if in, ok := body["input"].([]any); ok {
			if r := responsesPairing(in); r != "" {
				return r
			}
			return checkCompactionItems(in)
		}
	}
	return ""
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func blocksOf(m map[string]any) []map[string]any {
	switch c := m["content"].(type) {
	case []any:
		out := make([]map[string]any, 0, len(c))
		for _, b := range c {
			out = append(out, asMap(b))
		}
		return out
	case string:
		return []map[string]any{{"type": "text", "text": c}}
	}
	return nil
}

func anthropicPairing(msgs []any) string {
	pending := map[string]bool{}
	for i, mv := range msgs {
		m := asMap(mv)
		role, _ := m["role"].(string)
		if role == "system" {
			continue
		}
		answered := map[string]bool{}
		for _, b := range blocksOf(m) {
			if b["type"] == "tool_result" {
				id, _ := b["tool_use_id"].(string)
				if !pending[id] {
					return fmt.Sprintf("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, id)
				}
				answered[id] = true
			}
		}
		for id := range pending {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
			}
		}
		pending = map[string]bool{}
		if role == "assistant" {
			for _, b := range blocksOf(m) {
				if b["type"] == "tool_use" {
					id, _ := b["id"].(string)
					pending[id] = true
				}
			}
		}
	}
	return ""
}

func chatPairing(msgs []any) string {
	pending := map[string]bool{}
	for i, mv := range msgs {
		m := asMap(mv)
		switch m["role"] {
		case "tool":
			id, _ := m["tool_call_id"].(string)
			if !pending[id] {
				return fmt.Sprintf("messages.[%d].role: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (%s)", i, id)
			}
			delete(pending, id)
		default:
			if len(pending) > 0 {
				return fmt.Sprintf("messages.[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", i)
			}
			if tcs, ok := m["tool_calls"].([]any); ok {
				for _, tc := range tcs {
					id, _ := asMap(tc)["id"].(string)
					pending[id] = true
				}
			}
		}
	}
	if len(pending) > 0 {
		return "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"
	}
	return ""
}

func responsesPairing(items []any) string {
	calls := map[string]bool{}
	for i, iv := range items {
		it := asMap(iv)
		typ, _ := it["type"].(string)
		id, _ := it["call_id"].(string)
		switch {
		case strings.HasSuffix(typ, "_output"):
			if !calls[id] {
				return fmt.Sprintf("input[%d]: No tool call found for function call output with call_id %s.", i, id)
			}
			delete(calls, id)
		case id != "":
			calls[id] = true
		}
	}
	for id := range calls {
		return "No tool output found for function call " + id + "."
	}
	return ""
}

// checkTTLOrder applies the rule of mixed cache lifetimes: a breakpoint
// asking for the hour (cache_control.ttl "1h") may not come after one of
// the 5-minute default, in the order tools, system, messages.
func checkTTLOrder(body map[string]any) string {
	short := false
	var blocks []any
	for _, k := range []string{"tools", "system"} {
		if a, ok := body[k].([]any); ok {
			blocks = append(blocks, a...)
		}
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if c, ok := asMap(m)["content"].([]any); ok {
			blocks = append(blocks, c...)
		}
	}
	for _, b := range blocks {
		cc := asMap(asMap(b)["cache_control"])
		if cc == nil {
			continue
		}
		switch ttl, _ := cc["ttl"].(string); ttl {
		case "1h":
			if short {
				return "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
			}
		default:
			short = true
		}
	}
	return ""
}

func countCacheControl(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "cache_control" && e != nil {
				n++
				continue
			}
			n += countCacheControl(e)
		}
	case []any:
		for _, e := range x {
			n += countCacheControl(e)
		}
	}
	return n
}

// SignaturePrefix starts every thinking signature the fake writes; blocks
// with other signatures are not checked.
const SignaturePrefix = "fakesig:"

// signature is the signature of a thinking block produced after prefix:
// a hash of system, tools, and the messages before it, without
// cache_control (breakpoints move without changing what the model read),
// and with string content read as the one text block it stands for.
func signature(system, tools any, msgs []any, blocks []any) string {
	prefix := map[string]any{"system": strip(system), "tools": strip(tools), "messages": strip(msgs), "blocks": strip(blocks)}
	b, _ := json.Marshal(prefix)
	h := sha256.Sum256(b)
	return SignaturePrefix + hex.EncodeToString(h[:16])
}

func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if str, ok := e.(string); ok && k == "content" {
				out[k] = []any{map[string]any{"type": "text", "text": str}}
				continue
			}
			if k != "cache_control" {
				out[k] = strip(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = strip(e)
		}
		return out
	}
	return v
}

// ThinkingBindingBeta is the beta header value that enables the
// thinking.block_binding controls.
const ThinkingBindingBeta = "thinking-binding-controls-2026-08-01"

// checkThinking rejects a signed thinking block whose prefix changed,
// unless the request asks for such blocks to be dropped (which needs the
// controls' beta).
func checkThinking(header http.Header, body map[string]any) string {
	th := asMap(body["thinking"])
	if b := asMap(th["block_binding"]); b != nil {
		if !strings.Contains(strings.Join(header.Values("anthropic-beta"), ","), ThinkingBindingBeta) {
			return "thinking.block_binding: Extra inputs are not permitted (this feature requires the beta " + ThinkingBindingBeta + ")"
		}
		if b["prefix_mismatch_behavior"] == "drop_block" {
			return ""
		}
	}
	if i, j := invalidThinking(body, nil); i >= 0 {
		return fmt.Sprintf("messages.%d.content.%d: the thinking block's prefix binding does not match this request: system, tools or an earlier message changed after the block was produced", i, j)
	}
	return ""
}

// checkFinalThinking applies the rule of thinking with tool use: while
// thinking is on, the last assistant message of an open tool loop (before
// the last set of tool results) must be sent back with the thinking it was
// produced with, first. The fake knows which of its replies had thinking
// (an adaptive model may answer without): those whose tool calls it
// recorded in thought.
func (s *Server) checkFinalThinking(body map[string]any) string {
	th := asMap(body["thinking"])
	if th == nil || th["type"] == "disabled" {
		return ""
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) < 2 {
		return ""
	}
	last := asMap(msgs[len(msgs)-1])
	bl := blocksOf(last)
	if last["role"] != "user" || len(bl) == 0 {
		return ""
	}
	for _, b := range bl {
		if b["type"] != "tool_result" {
			return ""
		}
	}
	prev := asMap(msgs[len(msgs)-2])
	pb := blocksOf(prev)
	for len(pb) > 0 && pb[0]["type"] == "compaction" {
		pb = pb[1:] // a threshold compaction's block comes first (compaction.go)
	}
	if prev["role"] != "assistant" || len(pb) == 0 {
		return ""
	}
	if t := pb[0]["type"]; t == "thinking" || t == "redacted_thinking" {
		return ""
	}
	for _, b := range pb {
		if id, _ := b["id"].(string); b["type"] == "tool_use" && id != "" {
			if _, ok := s.thought.Load(id); ok {
				return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%v`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).", len(msgs)-2, pb[0]["type"])
			}
		}
	}
	return ""
}

// dropBlock reports whether a request asks for invalid thinking blocks to
// be dropped.
func dropBlock(body map[string]any) bool {
	return asMap(asMap(body["thinking"])["block_binding"])["prefix_mismatch_behavior"] == "drop_block"
}

// invalidThinking returns the place of the first signed thinking block
// whose prefix changed (-1, -1 when none); with n, it counts them all in
// *n. Once a block is invalid, every later thinking block is (the API
// drops them with it).
func invalidThinking(body map[string]any, n *int) (int, int) {
	msgs, _ := body["messages"].([]any)
	fi, fj := -1, -1
	for i, mv := range msgs {
		m := asMap(mv)
		if m["role"] != "assistant" {
			continue
		}
		c, _ := m["content"].([]any)
		for j, bv := range c {
			b := asMap(bv)
			if b["type"] != "thinking" && b["type"] != "redacted_thinking" {
				continue
			}
			sig, _ := b["signature"].(string)
			invalid := fi >= 0
			if !invalid && b["type"] == "thinking" && strings.HasPrefix(sig, SignaturePrefix) {
				invalid = signature(body["system"], body["tools"], msgs[:i], c[:j]) != sig
			}
			if !invalid {
				continue
			}
			if fi < 0 {
				fi, fj = i, j
			}
			if n == nil {
				return fi, fj
			}
			*n++
		}
	}
	return fi, fj
}

func (s *Server) call(api string, r *http.Request, body map[string]any, raw []byte) *Call {
	c := &Call{API: api, Path: r.URL.Path, Header: r.Header, Body: body, Raw: raw}
	c.Model, _ = body["model"].(string)
	c.Stream, _ = body["stream"].(bool)
	for _, t := range asSlice(body["tools"]) {
		tm := asMap(t)
		if n, ok := tm["name"].(string); ok {
			c.ToolNames = append(c.ToolNames, n)
		} else if f := asMap(tm["function"]); f != nil {
			n, _ := f["name"].(string)
			c.ToolNames = append(c.ToolNames, n)
		}
	}
	var all []string
	switch api {
	case APIResponses:
		prevOut := false // the item before was model output: one turn
		for _, iv := range asSlice(body["input"]) {
			it := asMap(iv)
			typ, _ := it["type"].(string)
			out := it["role"] == "assistant" || typ == "reasoning" || strings.HasSuffix(typ, "_call")
			switch {
			case strings.HasSuffix(typ, "_output"):
				c.Results = append(c.Results, textOf(it["output"]))
				all = append(all, textOf(it["output"]))
			case out:
				if !prevOut {
					c.Turn++
				}
				c.Results = nil
			default:
				all = append(all, textOf(it["content"]))
			}
			prevOut = out
		}
	default:
		for _, mv := range asSlice(body["messages"]) {
			m := asMap(mv)
			switch m["role"] {
			case "assistant":
				c.Turn++
				c.Results = nil
			case "tool":
				c.Results = append(c.Results, textOf(m["content"]))
			default:
				for _, b := range blocksOf(m) {
					if b["type"] == "tool_result" {
						c.Results = append(c.Results, textOf(b["content"]))
					}
				}
			}
			all = append(all, textOf(m["content"]))
		}
	}
	c.AllText = strings.Join(all, "\n")
	return c
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// textOf returns the text of a content value: a string, or the text
// members of a list, recursively.
func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, textOf(e))
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if t, ok := x["text"].(string); ok {
			return t
		}
		if c, ok := x["content"]; ok {
			return textOf(c)
		}
		if c, ok := x["output"]; ok {
			return textOf(c)
		}
	}
	return ""
}
