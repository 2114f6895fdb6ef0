package fakeupstream

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/tokens"
)

// BillPath is where the fake serves its Bill as JSON (GET).
const BillPath = "/_fake/bill"

// Totals are the billed requests of the fake, or of one session.
type Totals struct {
	// Requests counts the accepted model requests (summaries included).
	Requests int `json:"requests"`
	// Input is the uncached input tokens; CacheRead the tokens read from
	// the prompt cache; CacheWrite and CacheWrite1h the tokens written to
	// it with the 5-minute and the 1-hour lifetime; Output the output
	// tokens.
	Input        int `json:"input_tokens"`
	CacheRead    int `json:"cache_read_input_tokens"`
	CacheWrite   int `json:"cache_creation_input_tokens"`
	CacheWrite1h int `json:"cache_creation_1h_input_tokens"`
	Output       int `json:"output_tokens"`
	// USD is the cost at Options.Prices.
	USD float64 `json:"usd"`
	// LargestRequest is the most input tokens (read, written and
	// uncached) of one request.
	LargestRequest int `json:"largest_request_input_tokens"`
	// Rejections counts the model requests answered with a 400 (invalid,
	// or "prompt is too long"), or a Gemini request's 403 (no API key).
	Rejections int `json:"rejections"`
	// Compactions counts the compaction passes: Anthropic threshold
	// compactions (compact_20260112), and Responses ones (POST
	// /v1/responses/compact, and requests whose context_management
	// threshold was crossed).
	Compactions int `json:"compactions"`

	// Signed thinking and context editing (contextmgmt.go).
	ThinkingTotals
}

// InputTotal returns every input token billed: uncached, read and written.
func (t Totals) InputTotal() int { return t.Input + t.CacheRead + t.CacheWrite + t.CacheWrite1h }

// Bill is what the fake would have charged: totals overall and per
// session (the x-claude-code-session-id header, the session in
// metadata.user_id, the body's prompt_cache_key, the session_id header
// Codex sends, or the X-Agentctx-Session header; requests with none are
// under "").
type Bill struct {
	Totals
	Sessions map[string]Totals `json:"sessions,omitempty"`
}

// Bill returns the bill so far.
func (s *Server) Bill() Bill {
	s.billing.mu.Lock()
	defer s.billing.mu.Unlock()
	b := Bill{Totals: s.billing.total, Sessions: make(map[string]Totals, len(s.billing.sessions))}
	for k, v := range s.billing.sessions {
		b.Sessions[k] = v
	}
	return b
}

func (s *Server) serveBill(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.Bill())
}

// billing holds the prompt caches, one per API key and model, and the
// bill.
type billing struct {
	mu       sync.Mutex
	caches   map[string]*pricing.Cache
	total    Totals
	sessions map[string]Totals
}

func (s *Server) cache(api, key, model string) *pricing.Cache {
	s.billing.mu.Lock()
	defer s.billing.mu.Unlock()
	scope := api + "\x00" + key + "\x00" + model
	c := s.billing.caches[scope]
	if c == nil && api == APIGemini {
		c = pricing.NewCache(s.geminiCachePrices(model))
		s.billing.caches[scope] = c
	}
	if c == nil {
		provider := pricing.Anthropic
		if api != APIAnthropic {
			provider = pricing.OpenAI
		}
		p, ok := s.opts.Prices.Lookup(model)
		if !ok {
			p = pricing.Fallback(provider)
		}
		p.Provider = provider // the API's cache rules, whatever the model
		c = pricing.NewCache(p)
		s.billing.caches[scope] = c
	}
	return c
}

// reject counts a rejected model request.
func (s *Server) reject(header http.Header, body map[string]any) {
	s.billing.mu.Lock()
	defer s.billing.mu.Unlock()
	s.billing.total.Rejections++
	k := sessionOf(header, body)
	t := s.billing.sessions[k]
	t.Rejections++
	s.billing.sessions[k] = t
}

// usage bills a request and returns the usage its answer reports: the
// prompt cache's, or where the script set Reply.InputTokens, those (with
// 10 output tokens, unless Reply.OutputTokens) and nothing cached.
func (s *Server) usage(c *Call, reply Reply) pricing.Usage {
	out := reply.OutputTokens
	if out == 0 {
		out = outputTokens(reply)
	}
	key := c.key
	if key == "" {
		key = apiKey(c.Header)
	}
	cache := s.cache(c.API, key, c.Model)
	billed := c.Body
	if c.Edited != nil {
		billed = c.Edited // the prompt the model reads
	}
	// A threshold compaction is a sampling step of its own, billed like
	// a request on the prompt it read, before the message step reads the
	// compacted one (compaction.go); a paused answer has no message step.
	var cu pricing.Usage
	if cp := c.compaction; cp != nil {
		cu = cache.Bill(s.opts.Now(), requestBlocks(c.API, cp.Full), count(cp.Summary))
		c.compUsage = cu
		billed = cp.Compacted
	}
	var u pricing.Usage
	if c.compaction == nil || !c.compaction.Paused {
		u = cache.Bill(s.opts.Now(), requestBlocks(c.API, billed), out)
	}
	if reply.InputTokens != 0 {
		u = pricing.Usage{Uncached: reply.InputTokens, Output: 10}
		if reply.OutputTokens != 0 {
			u.Output = reply.OutputTokens
		}
	}
	cost := cache.Prices().Cost(u) + cache.Prices().Cost(cu)
	if c.API == APIGemini {
		cost = s.geminiCost(c.Model, u) // priced by the prompt's tier
	}
	s.billing.mu.Lock()
	defer s.billing.mu.Unlock()
	add := func(t Totals) Totals {
		t.Requests++
		for _, x := range []pricing.Usage{cu, u} {
			t.Input += x.Uncached
			t.CacheRead += x.CacheRead
			t.CacheWrite += x.CacheWrite5m
			t.CacheWrite1h += x.CacheWrite1h
			t.Output += x.Output
			t.LargestRequest = max(t.LargestRequest, x.Input())
		}
		t.USD += cost
		if c.compaction != nil || c.respCompaction {
			t.Compactions++
		}
		for _, a := range c.Applied {
			t.ContextEdits++
			t.ClearedToolUses += a.ClearedToolUses
			t.ClearedInputTokens += a.ClearedInputTokens
		}
		return t
	}
	s.billing.total = add(s.billing.total)
	k := sessionOf(c.Header, c.Body)
	s.billing.sessions[k] = add(s.billing.sessions[k])
	return u
}

func apiKey(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	return h.Get("Authorization")
}

var userIDSession = regexp.MustCompile(`session_([0-9A-Za-z-]+)`)

func sessionOf(h http.Header, body map[string]any) string {
	if v := strings.TrimSpace(h.Get("X-Claude-Code-Session-Id")); v != "" {
		return v
	}
	if uid, _ := asMap(body["metadata"])["user_id"].(string); uid != "" {
		var m map[string]any
		if json.Unmarshal([]byte(uid), &m) == nil {
			if s, _ := m["session_id"].(string); s != "" {
				return s
			}
		}
		if m := userIDSession.FindStringSubmatch(uid); m != nil {
			return m[1]
		}
	}
	if v, _ := body["prompt_cache_key"].(string); v != "" {
		return v
	}
	for _, name := range []string{"Session_id", "X-Agentctx-Session"} {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			return v
		}
	}
	return ""
}

// outputTokens counts the tokens of a reply: thinking, text, and each tool
// call's name and input.
func outputTokens(r Reply) int {
	enc := tokens.O200kBase()
	n := enc.Count(r.Thinking) + enc.Count(r.Text)
	for _, tc := range r.ToolCalls {
		n += enc.Count(tc.Name) + enc.Count(inputJSON(tc.Input))
	}
	return max(n, 1)
}

// imageTokens is what an image is counted: Anthropic's largest image
// without resizing (about 1.15 megapixels) is about 1,600 tokens.
const imageTokens = 1600

// requestBlocks returns the blocks of a request as the provider's prompt
// cache sees them, in order: Anthropic's tools, system blocks and the
// content blocks of each message, with their cache_control breakpoints
// (and a top-level cache_control's on the last cacheable block); OpenAI
// chat's tools and messages; Responses' instructions, tools and input
// items; Gemini's system instruction, function declarations and the parts
// of each content (gemini.go). Each block's prefix key chains the block's JSON without
// cache_control, with the role of a message where the block starts one;
// its tokens are counted with o200k_base.
func requestBlocks(api string, body map[string]any) []pricing.Block {
	var bl builder
	switch api {
	case APIAnthropic:
		bl.anthropic(body)
	case APIChat:
		bl.chat(body)
	case APIResponses:
		bl.responses(body)
	case APIGemini:
		bl.gemini(body)
	}
	return bl.blocks
}

// anthropic adds a Messages request's tools, system blocks and the content
// blocks of each message, with their breakpoints; a top-level
// cache_control sets one on the last cacheable block.
func (bl *builder) anthropic(body map[string]any) {
	for _, t := range asSlice(body["tools"]) {
		tm := asMap(t)
		bl.add("tool", tm, countJSON(tm), tm["cache_control"])
	}
	switch sys := body["system"].(type) {
	case string:
		if sys != "" {
			bl.add("system", map[string]any{"type": "text", "text": sys}, count(sys), nil)
		}
	case []any:
		for _, b := range sys {
			bm := asMap(b)
			bl.add("system", bm, blockTokens(bm), bm["cache_control"])
		}
	}
	for _, mv := range asSlice(body["messages"]) {
		m := asMap(mv)
		role, _ := m["role"].(string)
		for i, b := range blocksOf(m) {
			tag := ""
			if i == 0 {
				tag = role
			}
			bl.add(tag, b, blockTokens(b), b["cache_control"])
			bl.cacheable[len(bl.blocks)-1] = cacheable(b)
		}
	}
	if cc := asMap(body["cache_control"]); cc != nil {
		for i := len(bl.blocks) - 1; i >= 0; i-- {
			if bl.cacheable[i] {
				if !bl.blocks[i].Breakpoint {
					bl.blocks[i].Breakpoint, bl.blocks[i].TTL = true, ttlOf(cc)
				}
				break
			}
		}
	}
}

// chat adds a chat completions request's tools and messages (a message's
// tokens those of its text and its tool calls).
func (bl *builder) chat(body map[string]any) {
	for _, t := range asSlice(body["tools"]) {
		bl.add("tool", t, countJSON(t), nil)
	}
	for _, mv := range asSlice(body["messages"]) {
		m := asMap(mv)
		role, _ := m["role"].(string)
		n := count(textOf(m["content"]))
		for _, tc := range asSlice(m["tool_calls"]) {
			f := asMap(asMap(tc)["function"])
			name, _ := f["name"].(string)
			args, _ := f["arguments"].(string)
			n += count(name) + count(args)
		}
		bl.add(role, m, n, nil)
	}
}

// responses adds a Responses request's instructions, tools and input
// items; with "prompt_cache_retention": "24h" (extended retention) their
// prefixes live ExtendedRetention.
func (bl *builder) responses(body map[string]any) {
	if body["prompt_cache_retention"] == "24h" {
		defer func() {
			for i := range bl.blocks {
				bl.blocks[i].TTL = ExtendedRetention
			}
		}()
	}
	if s, _ := body["instructions"].(string); s != "" {
		bl.add("instructions", s, count(s), nil)
	}
	for _, t := range asSlice(body["tools"]) {
		bl.add("tool", t, countJSON(t), nil)
	}
	switch in := body["input"].(type) {
	case string:
		bl.add("user", map[string]any{"role": "user", "content": in}, count(in), nil)
	case []any:
		for _, iv := range in {
			it := asMap(iv)
			n := 0
			switch {
			case it["type"] == "compaction":
				n = compactionItemTokens(it)
			case it["content"] != nil:
				n = count(textOf(it["content"]))
			case it["output"] != nil:
				n = count(textOf(it["output"]))
			case it["arguments"] != nil:
				name, _ := it["name"].(string)
				args, _ := it["arguments"].(string)
				n = count(name) + count(args)
			default:
				n = countJSON(it)
			}
			bl.add("item", it, n, nil)
		}
	}
}

// builder collects the blocks of a request, chaining their prefix keys.
type builder struct {
	blocks    []pricing.Block
	cacheable map[int]bool
	key       pricing.Key
}

func (bl *builder) add(tag string, v any, n int, cacheControl any) {
	b, _ := json.Marshal(strip(v))
	bl.key = bl.key.Extend(append([]byte(tag+"\x00"), b...))
	blk := pricing.Block{Prefix: bl.key, Tokens: n}
	if cc := asMap(cacheControl); cc != nil {
		blk.Breakpoint, blk.TTL = true, ttlOf(cc)
	}
	bl.blocks = append(bl.blocks, blk)
	if bl.cacheable == nil {
		bl.cacheable = map[int]bool{}
	}
	bl.cacheable[len(bl.blocks)-1] = true
}

// cacheable reports whether a message block can carry a breakpoint:
// thinking blocks and empty text cannot.
func cacheable(b map[string]any) bool {
	switch b["type"] {
	case "thinking", "redacted_thinking":
		return false
	case "text":
		t, _ := b["text"].(string)
		return t != ""
	}
	return true
}

// ExtendedRetention is how long OpenAI keeps the cached prefixes of a
// request with "prompt_cache_retention": "24h".
const ExtendedRetention = 24 * time.Hour

func ttlOf(cc map[string]any) time.Duration {
	switch cc["ttl"] {
	case "1h":
		return time.Hour
	case "5m":
		return 5 * time.Minute
	}
	return 0
}

func count(s string) int { return tokens.O200kBase().Count(s) }

func countJSON(v any) int {
	b, _ := json.Marshal(strip(v))
	return count(string(b))
}

// blockTokens counts an Anthropic content block: its text, thinking, tool
// call (name and input) or tool result (its blocks); an image as
// imageTokens; anything else as its JSON.
func blockTokens(b map[string]any) int {
	switch b["type"] {
	case "text":
		t, _ := b["text"].(string)
		return count(t)
	case "thinking":
		t, _ := b["thinking"].(string)
		return count(t)
	case "tool_use", "server_tool_use":
		name, _ := b["name"].(string)
		return count(name) + count(inputJSON(asMap(b["input"])))
	case "tool_result":
		switch c := b["content"].(type) {
		case string:
			return count(c)
		case []any:
			n := 0
			for _, e := range c {
				n += blockTokens(asMap(e))
			}
			return n
		}
		return 0
	case "compaction":
		t, _ := b["content"].(string)
		return count(t)
	case "image":
		return imageTokens
	}
	return countJSON(b)
}
