package fakeupstream

// The Gemini family: Google's Gemini API (generativelanguage, v1beta), as
// Gemini CLI and the Gen AI SDKs speak it. The references for its rules
// are Google's pages (ai.google.dev/gemini-api/docs/...: text-generation,
// function-calling, thought-signatures, caching, tokens, pricing; and the
// API reference ai.google.dev/api/generate-content and /api/tokens), and
// the 400s the real API answers, as reported in gemini-cli's issues.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentctx/agentctx/pricing"
)

// GeminiContextWindow is the input window of the Gemini 2.5 and 3 Pro
// and Flash models: 1,048,576 tokens (ai.google.dev/gemini-api/docs/models,
// "Input token limit"). Options.ContextWindow, when set, is the Gemini
// models' window too.
const GeminiContextWindow = 1_048_576

// GeminiLongPrompt is the prompt size above which the Pro models bill a
// request at their long-context prices: "prompts > 200k tokens", counted
// per request, cached tokens included (ai.google.dev/gemini-api/docs/pricing).
const GeminiLongPrompt = 200_000

// GeminiImplicitCacheTTL is how long the fake keeps an implicitly cached
// prefix after its last use. Google documents no lifetime for implicit
// caching (ai.google.dev/gemini-api/docs/caching says only to "send
// requests with similar prefix in a short amount of time"; the one hour
// there is explicit caching's default TTL): 5 minutes is a conservative
// guess, the shortest lifetime the other providers document.
const GeminiImplicitCacheTTL = 5 * time.Minute

// geminiImageTokens is what an inline image is counted: 258 tokens, an
// image of at most 384 pixels a side (ai.google.dev/gemini-api/docs/tokens).
const geminiImageTokens = 258

// GeminiPricing is the price table of the Gemini models, in USD per
// million tokens: Short for a request whose prompt is at most
// GeminiLongPrompt tokens, Long (the Pro models) above. Keys match model
// names as pricing.Table's do, by longest prefix; a model Long does not
// know has one price at every size. CacheWrite is unused: implicit caching
// bills no write, and the fake bills no storage (implicit caching has
// none).
type GeminiPricing struct {
	Short, Long pricing.Table
}

// DefaultGeminiPricing returns the Standard paid tier's prices of text
// input and output (thinking tokens billed as output), and the cached
// input's ("Context caching price"), as ai.google.dev/gemini-api/docs/pricing
// listed them in 2026 (Gemini 3 Pro Preview's are also Gemini 3.1 Pro
// Preview's). MinCacheable is each model's minimum for implicit caching,
// from the caching page as updated in October 2026 (2,048 tokens for
// Gemini 2.5 Pro and Flash, 4,096 for the Gemini 3 models; earlier
// versions of the page listed 1,024 for 2.5 Flash and 3 Flash and 4,096
// for 2.5 Pro); Flash-Lite, which the page does not list, is taken as 2.5
// Flash.
func DefaultGeminiPricing() GeminiPricing {
	g := func(in, cached, out float64, minCacheable int) pricing.Prices {
		return pricing.Prices{Input: in, CacheRead: cached, CacheWrite: in, Output: out, MinCacheable: minCacheable, TTL: GeminiImplicitCacheTTL}
	}
	return GeminiPricing{
		Short: pricing.Table{
			"gemini-2.5-pro":         g(1.25, 0.125, 10, 2048),
			"gemini-2.5-flash":       g(0.30, 0.03, 2.50, 2048),
			"gemini-2.5-flash-lite":  g(0.10, 0.01, 0.40, 2048),
			"gemini-3-pro-preview":   g(2, 0.20, 12, 4096),
			"gemini-3.1-pro-preview": g(2, 0.20, 12, 4096),
			"gemini-3-flash-preview": g(0.50, 0.05, 3, 4096),
		},
		Long: pricing.Table{
			"gemini-2.5-pro":         g(2.50, 0.25, 15, 2048),
			"gemini-3-pro-preview":   g(4, 0.40, 18, 4096),
			"gemini-3.1-pro-preview": g(4, 0.40, 18, 4096),
		},
	}
}

// geminiFallback is the model whose prices bill a model the table does not
// know.
const geminiFallback = "gemini-2.5-pro"

// prices returns model's prices for a prompt of prompt tokens.
func (g GeminiPricing) prices(model string, prompt int) pricing.Prices {
	model = strings.TrimPrefix(model, "models/")
	if prompt > GeminiLongPrompt {
		if p, ok := g.Long.Lookup(model); ok {
			return p
		}
	}
	if p, ok := g.Short.Lookup(model); ok {
		return p
	}
	if _, ok := g.Short.Lookup(geminiFallback); ok && model != geminiFallback {
		return g.prices(geminiFallback, prompt)
	}
	return pricing.Prices{MinCacheable: 4096, TTL: GeminiImplicitCacheTTL}
}

// geminiCachePrices are the parameters of a Gemini model's implicit cache.
// It follows pricing's OpenAI rules: every request's prefixes are cached,
// a request reads the longest one an earlier live request shared, from
// MinCacheable tokens, and nothing is billed as a write. Those rules round
// a hit down to a multiple of 128 tokens past the minimum, a granularity
// Google does not document: the fake may bill up to 127 cached tokens as
// uncached.
func (s *Server) geminiCachePrices(model string) pricing.Prices {
	p := s.opts.GeminiPrices.prices(model, 0)
	p.Provider = pricing.OpenAI
	if p.TTL <= 0 {
		p.TTL = GeminiImplicitCacheTTL
	}
	return p
}

// geminiCost prices a Gemini request's usage at the tier of its prompt.
func (s *Server) geminiCost(model string, u pricing.Usage) float64 {
	return s.opts.GeminiPrices.prices(model, u.Input()).Cost(u)
}

// isGeminiPath reports a Gemini model method's path: /v1beta/models/
// {model}:{method} (or /v1/, /v1alpha/).
func isGeminiPath(path string) bool {
	_, _, ok := geminiRoute(path)
	return ok
}

func geminiRoute(path string) (model, method string, ok bool) {
	for _, v := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		if rest, found := strings.CutPrefix(path, v); found {
			model, method, ok = strings.Cut(rest, ":")
			return model, method, ok && model != "" && method != ""
		}
	}
	return "", "", false
}

// isGemini3 reports a model of generation 3 or later ("gemini-3-pro-preview",
// "gemini-3.1-..."), which enforce thought signatures.
func isGemini3(model string) bool {
	m := strings.ToLower(strings.TrimPrefix(model, "models/"))
	rest, ok := strings.CutPrefix(m, "gemini-")
	if !ok {
		return false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsDigit(r) })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.Atoi(rest[:end])
	return err == nil && n >= 3
}

// geminiKey is the request's API key: the x-goog-api-key header, else the
// key query parameter (ai.google.dev/api: "x-goog-api-key" or "key=").
func geminiKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Goog-Api-Key")); k != "" {
		return k
	}
	return strings.TrimSpace(r.URL.Query().Get("key"))
}

// geminiError is an error the Gemini API answers: Google's error shape
// {"error": {"code", "message", "status"}}.
type geminiError struct {
	Code    int
	Status  string
	Message string
}

func (e *geminiError) Error() string { return e.Message }

func invalidArgument(format string, args ...any) *geminiError {
	return &geminiError{Code: http.StatusBadRequest, Status: "INVALID_ARGUMENT", Message: fmt.Sprintf(format, args...)}
}

// writeGeminiErr writes e; array wraps it in a JSON array, as the
// streaming method without alt=sse answers.
func writeGeminiErr(w http.ResponseWriter, array bool, e *geminiError) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.Code)
	var v any = map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "status": e.Status}}
	if array {
		v = []any{v}
	}
	json.NewEncoder(w).Encode(v)
}

// serveGemini answers a Gemini model method: generateContent,
// streamGenerateContent (SSE with alt=sse, else a JSON array of the
// chunks) and countTokens.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := geminiRoute(r.URL.Path)
	raw := readBody(r)
	rec := Record{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), API: APIGemini, Size: len(raw), Body: raw}
	stream := method == "streamGenerateContent"
	sse := stream && r.URL.Query().Get("alt") == "sse"
	fail := func(e *geminiError, body map[string]any) {
		rec.Rejected = e.Message
		s.record(rec)
		s.reject(r.Header, body)
		writeGeminiErr(w, stream && !sse, e)
	}
	if method != "generateContent" && method != "streamGenerateContent" && method != "countTokens" {
		s.record(rec)
		writeGeminiErr(w, false, &geminiError{Code: http.StatusNotFound, Status: "NOT_FOUND",
			Message: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for %s.", model, method)})
		return
	}
	key := geminiKey(r)
	if key == "" {
		// What the API answers a request without a key (PERMISSION_DENIED).
		fail(&geminiError{Code: http.StatusForbidden, Status: "PERMISSION_DENIED",
			Message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}, nil)
		return
	}
	body, req, gerr := decodeGeminiBody(raw, method == "countTokens")
	if gerr != nil {
		fail(gerr, body)
		return
	}
	if method == "countTokens" {
		s.record(rec)
		n := 0
		for _, b := range requestBlocks(APIGemini, req.body) {
			n += b.Tokens
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		json.NewEncoder(w).Encode(map[string]any{"totalTokens": n,
			"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": n}}})
		return
	}
	if e := s.checkGemini(model, req, len(raw)); e != nil {
		fail(e, body)
		return
	}
	s.record(rec)
	c := newGeminiCall(r, model, body, raw, req)
	c.Stream, c.key = stream, key
	var reply Reply
	if mt := req.MaxOutputTokens; mt >= 1 && mt < minScriptTokens {
		// As the Messages API's short max_tokens (minScriptTokens): cut at
		// once, without moving the script on.
		reply = Reply{Text: "I", OutputTokens: mt, Truncated: true}
	} else {
		reply = s.reply(APIGemini, c, body)
	}
	u := s.usage(c, reply)
	s.gemini(w, c, req, reply, u, sse)
}

// newGeminiCall returns the Call of a Gemini request: its tools are the function
// declarations, its turns the model contents, its results the function
// responses since the last one.
func newGeminiCall(r *http.Request, model string, body map[string]any, raw []byte, req geminiRequest) *Call {
	c := &Call{API: APIGemini, Path: r.URL.Path, Header: r.Header, Model: strings.TrimPrefix(model, "models/"), Body: body, Raw: raw,
		ToolNames: req.Functions}
	var all []string
	for _, ct := range req.Contents {
		if ct.Role == "model" {
			c.Turn++
			c.Results = nil
		}
		for _, p := range ct.Parts {
			switch {
			case p.Response != nil:
				t := geminiResultText(p.Response.Response)
				c.Results = append(c.Results, t)
				all = append(all, t)
			case p.Text != nil && !p.Thought:
				all = append(all, *p.Text)
			}
		}
	}
	c.AllText = strings.Join(all, "\n")
	return c
}

// geminiResultText is the text of a function response: its output (Gemini
// CLI's {"output": ...}) or text, else its JSON.
func geminiResultText(resp map[string]any) string {
	if t := textOf(resp); t != "" {
		return t
	}
	b, _ := json.Marshal(resp)
	return string(b)
}

// isDummySignature reports the documented dummy signatures that skip the
// validation, for function calls that no Gemini 3 model produced
// (ai.google.dev/gemini-api/docs/thought-signatures, FAQ:
// "context_engineering_is_the_way_to_go" or
// "skip_thought_signature_validator"; Gemini CLI sends the second).
func isDummySignature(sig string) bool {
	switch sig {
	case "context_engineering_is_the_way_to_go", "skip_thought_signature_validator":
		return true
	}
	return false
}

// geminiSigMagic starts the bytes of every thought signature the fake
// issues; 12 bytes, so that the base64 text starts with
// GeminiSignaturePrefix, its encoding.
const geminiSigMagic = "agentctxfake"

// GeminiSignaturePrefix starts every thought signature the fake issues
// (base64, as the API's bytes are); signatures without it are not checked.
const GeminiSignaturePrefix = "YWdlbnRjdHhmYWtl"

// sigBinding is the part a thought signature was issued on: a function
// call (its key), or the last part of an answer without calls, whose
// signature the API does not validate.
type sigBinding struct {
	call bool
	key  string
}

// callKey identifies a function call part: its name, arguments and id.
func callKey(fc *geminiCall) string {
	args, _ := json.Marshal(fc.Args)
	if fc.Args == nil {
		args = []byte("{}")
	}
	return fc.Name + "\x00" + string(args) + "\x00" + fc.ID
}

// issueSignature returns a new thought signature bound to b.
func (s *Server) issueSignature(b sigBinding) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%v\x00%s", s.seq.Add(1), b.call, b.key)))
	sig := base64.StdEncoding.EncodeToString(append([]byte(geminiSigMagic), h[:18]...))
	s.geminiSigs.Store(sig, b)
	return sig
}

// checkGemini applies the Gemini API's rules to a decoded request of size
// bytes for model; nil accepts it.
func (s *Server) checkGemini(model string, req geminiRequest, size int) *geminiError {
	if n := size / 4; n > s.geminiWindow {
		// The window, estimated as the other families' is (a quarter of the
		// body's bytes); the API's message for an over-long prompt.
		return invalidArgument("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, s.geminiWindow)
	}
	if len(req.Contents) == 0 {
		return invalidArgument("* GenerateContentRequest.contents: contents is not specified\n")
	}
	for i, ct := range req.Contents {
		if ct.Role != "" && ct.Role != "user" && ct.Role != "model" {
			return invalidArgument("Please use a valid role: user, model.")
		}
		if len(ct.Parts) == 0 {
			return invalidArgument("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)
		}
	}
	if e := geminiPairing(req.Contents); e != nil {
		return e
	}
	if isGemini3(model) {
		if e := s.checkSignatures(req.Contents); e != nil {
			return e
		}
	}
	if req.ThinkingBudget != nil && req.ThinkingLevel != "" {
		// Gemini 3 docs (ai.google.dev/gemini-api/docs/gemini-3, "Thinking
		// level"): the two in one request are a 400. The message is the
		// fake's.
		return invalidArgument("thinking_budget and thinking_level cannot both be set: use thinking_level (thinking_budget is the legacy parameter).")
	}
	return nil
}

func calls(ct geminiContent) []*geminiCall {
	var out []*geminiCall
	for _, p := range ct.Parts {
		if p.Call != nil {
			out = append(out, p.Call)
		}
	}
	return out
}

func responses(ct geminiContent) []*geminiResponse {
	var out []*geminiResponse
	for _, p := range ct.Parts {
		if p.Response != nil {
			out = append(out, p.Response)
		}
	}
	return out
}

// geminiPairing applies the rules of function calling's turns, with the
// API's messages (gemini-cli issues #11814, #2321, and the function
// response rule's): a function call turn (a model content with
// functionCall parts) comes right after a user turn or a function
// response turn; a function response turn (a content with
// functionResponse parts) comes right after a function call turn and has
// as many responses as it had calls; each response answers one call of
// that turn, by id where both have one (ai.google.dev/api/caching#
// FunctionResponse: the id "should match the id of the function call"),
// else by name, in order. The last rule's message is the fake's.
func geminiPairing(contents []geminiContent) *geminiError {
	for i, ct := range contents {
		fcs, frs := calls(ct), responses(ct)
		if len(fcs) > 0 && ct.Role == "model" && (i == 0 || contents[i-1].Role == "model") {
			return invalidArgument("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
		}
		if len(frs) == 0 {
			continue
		}
		var prev []*geminiCall
		if i > 0 && contents[i-1].Role == "model" {
			prev = calls(contents[i-1])
		}
		if len(prev) == 0 {
			return invalidArgument("Please ensure that function response turn comes immediately after a function call turn.")
		}
		if len(prev) != len(frs) {
			return invalidArgument("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		}
		used := make([]bool, len(prev))
		for _, fr := range frs {
			at := -1
			for j, fc := range prev {
				if used[j] {
					continue
				}
				if fr.ID != "" && fc.ID != "" {
					if fr.ID == fc.ID && fr.Name == fc.Name {
						at = j
						break
					}
					continue
				}
				if fr.Name == fc.Name {
					at = j
					break
				}
			}
			if at < 0 {
				return invalidArgument("contents[%d]: function response %q (id %q) matches no function call of the function call turn in contents[%d].", i, fr.Name, fr.ID, i-1)
			}
			used[at] = true
		}
	}
	return nil
}

// currentTurn returns where the current turn starts: at the last user
// content with text and no function response (ai.google.dev/gemini-api/
// docs/thought-signatures: the current turn is everything since the last
// standard user message; only it is validated), or 0.
func currentTurn(contents []geminiContent) int {
	for i := len(contents) - 1; i >= 0; i-- {
		ct := contents[i]
		if ct.Role == "model" || len(responses(ct)) > 0 {
			continue
		}
		for _, p := range ct.Parts {
			if p.Text != nil {
				return i
			}
		}
	}
	return 0
}

// checkSignatures applies the rule of thought signatures in function
// calling for Gemini 3 models (ai.google.dev/gemini-api/docs/
// thought-signatures): in the current turn, the first functionCall part of
// each model content must carry its signature, exactly as received and on
// the part it was received on. A missing one is the API's 400; a dummy
// signature passes; one the fake issued must be on the call it was issued
// for (a signature moved to another part is invalid); another's is not
// checked.
func (s *Server) checkSignatures(contents []geminiContent) *geminiError {
	for i := currentTurn(contents); i < len(contents); i++ {
		ct := contents[i]
		if ct.Role != "model" {
			continue
		}
		first := true
		for j, p := range ct.Parts {
			if p.Call != nil && first {
				first = false
				if p.Signature == "" {
					return invalidArgument("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.Call.Name, i+1)
				}
			}
			if p.Signature == "" || isDummySignature(p.Signature) || !strings.HasPrefix(p.Signature, GeminiSignaturePrefix) {
				continue
			}
			v, ok := s.geminiSigs.Load(p.Signature)
			b, _ := v.(sigBinding)
			if !ok || b.call && (p.Call == nil || callKey(p.Call) != b.key) {
				// The fake's signature, not on the part it was issued on.
				return invalidArgument("Corrupted thought signature. (contents[%d].parts[%d])", i, j)
			}
		}
	}
	return nil
}

// issuesSignatures reports whether model's function calls carry thought
// signatures: always for Gemini 3; for 2.5, while thinking is on (a
// thinking budget other than 0).
func issuesSignatures(model string, req geminiRequest) bool {
	return isGemini3(model) || req.ThinkingBudget == nil || *req.ThinkingBudget != 0
}

// geminiParts returns the parts of the answer to c: the thought summary
// (with thinkingConfig.includeThoughts), the text, and the function calls,
// with ids; the first call carries a thought signature (one per answer:
// parallel calls' later parts have none), or for Gemini 3 the last part
// of an answer without calls.
func (s *Server) geminiParts(c *Call, req geminiRequest, r Reply) []map[string]any {
	var parts []map[string]any
	if r.Thinking != "" && req.IncludeThoughts {
		parts = append(parts, map[string]any{"text": r.Thinking, "thought": true})
	}
	if r.Text != "" {
		parts = append(parts, map[string]any{"text": r.Text})
	}
	signed := false
	for _, tc := range r.ToolCalls {
		args := tc.Input
		if args == nil {
			args = map[string]any{}
		}
		fc := &geminiCall{ID: s.id("call"), Name: tc.Name, Args: args}
		p := map[string]any{"functionCall": map[string]any{"id": fc.ID, "name": fc.Name, "args": fc.Args}}
		if !signed && issuesSignatures(c.Model, req) {
			// The key of the call as the client will send it back: its
			// args through JSON, as it reads them.
			var back geminiCall
			b, _ := json.Marshal(p["functionCall"])
			json.Unmarshal(b, &back)
			p["thoughtSignature"] = s.issueSignature(sigBinding{call: true, key: callKey(&back)})
			signed = true
		}
		parts = append(parts, p)
	}
	if !signed && len(parts) > 0 && isGemini3(c.Model) {
		parts[len(parts)-1]["thoughtSignature"] = s.issueSignature(sigBinding{})
	}
	return parts
}

// geminiUsage is the usageMetadata of an answer: promptTokenCount counts
// the cached tokens too, candidatesTokenCount excludes the thoughts, and
// totalTokenCount is their sum (ai.google.dev/api/generate-content#
// UsageMetadata); zero counts are left out, as the API leaves them.
func geminiUsage(u pricing.Usage, thoughts int) map[string]any {
	prompt := u.Input()
	m := map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": u.Output - thoughts, "totalTokenCount": prompt + u.Output,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": prompt}}}
	if u.CacheRead > 0 {
		m["cachedContentTokenCount"] = u.CacheRead
		m["cacheTokensDetails"] = []any{map[string]any{"modality": "TEXT", "tokenCount": u.CacheRead}}
	}
	if thoughts > 0 {
		m["thoughtsTokenCount"] = thoughts
	}
	return m
}

// gemini answers c in the GenerateContentResponse format: one object, or
// streamed as chunks (SSE "data:" events with sse, else a JSON array).
// Text is streamed in pieces, each function call whole in its own chunk;
// the last chunk carries the finishReason and the usage.
func (s *Server) gemini(w http.ResponseWriter, c *Call, req geminiRequest, r Reply, u pricing.Usage, sse bool) {
	parts := s.geminiParts(c, req, r)
	thoughts := 0
	if r.Thinking != "" {
		thoughts = min(count(r.Thinking), max(u.Output-1, 0))
	}
	finish := "STOP"
	if r.Truncated {
		finish = "MAX_TOKENS"
	}
	rid := s.id("resp")
	response := func(ps []map[string]any, last bool) map[string]any {
		if ps == nil {
			ps = []map[string]any{}
		}
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": ps}, "index": 0}
		usage := map[string]any{"promptTokenCount": u.Input(), "totalTokenCount": u.Input()}
		if last {
			cand["finishReason"] = finish
			usage = geminiUsage(u, thoughts)
		}
		return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": c.Model, "responseId": rid}
	}
	if !c.Stream {
		if r.Error != "" {
			writeGeminiErr(w, false, &geminiError{Code: http.StatusServiceUnavailable, Status: "UNAVAILABLE", Message: r.Error})
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		json.NewEncoder(w).Encode(response(parts, true))
		return
	}
	chunks := geminiChunks(parts)
	var f http.Flusher
	if fl, ok := w.(http.Flusher); ok {
		f = fl
	}
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		fmt.Fprint(w, "[")
	}
	emit := func(i int, v any) {
		b, _ := json.Marshal(v)
		switch {
		case sse:
			// Google's event streams end each event with CRLF CRLF.
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		case i > 0:
			fmt.Fprintf(w, ",\r\n%s", b)
		default:
			w.Write(b)
		}
		if f != nil {
			f.Flush()
		}
	}
	for i, ch := range chunks {
		if r.Error != "" && i == 1 {
			emit(i, map[string]any{"error": map[string]any{"code": http.StatusServiceUnavailable, "message": r.Error, "status": "UNAVAILABLE"}})
			break
		}
		emit(i, response(ch, i == len(chunks)-1))
	}
	if !sse {
		fmt.Fprint(w, "]")
	}
}

// geminiChunk is the most bytes of text a streamed chunk carries.
const geminiChunk = 64

// geminiChunks splits an answer's parts into the chunks of its stream:
// a long text in pieces (its thought signature on the last), every other
// part whole in a chunk of its own; an empty answer is one empty text.
func geminiChunks(parts []map[string]any) [][]map[string]any {
	var chunks [][]map[string]any
	for _, p := range parts {
		if t, ok := p["text"].(string); ok && p["thought"] == nil && len(t) > geminiChunk {
			pieces := splitText(t, geminiChunk)
			for k, piece := range pieces {
				q := map[string]any{"text": piece}
				if sig, ok := p["thoughtSignature"]; ok && k == len(pieces)-1 {
					q["thoughtSignature"] = sig
				}
				chunks = append(chunks, []map[string]any{q})
			}
			continue
		}
		chunks = append(chunks, []map[string]any{p})
	}
	if len(chunks) == 0 {
		chunks = [][]map[string]any{{{"text": ""}}}
	}
	return chunks
}

// splitText cuts t into pieces of at most n bytes, at rune boundaries.
func splitText(t string, n int) []string {
	var out []string
	for len(t) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, t[:cut])
		t = t[cut:]
	}
	return append(out, t)
}

// gemini adds a Gemini request's system instruction parts, function
// declarations, and the parts of each content (the content's role with
// its first part), in that order, as explicit caching stores them
// (ai.google.dev/api/caching#CachedContent: systemInstruction, tools,
// contents). A text part counts its text, a call its name and arguments, a
// response its name and JSON, inline data geminiImageTokens; a thought
// signature nothing.
func (bl *builder) gemini(body map[string]any) {
	if sys := asMap(geminiField(body, "systemInstruction")); sys != nil {
		for _, p := range asSlice(sys["parts"]) {
			pm := asMap(p)
			bl.add("system", pm, geminiPartTokens(pm), nil)
		}
	}
	for _, t := range asSlice(body["tools"]) {
		for _, d := range asSlice(geminiField(asMap(t), "functionDeclarations")) {
			bl.add("tool", d, countJSON(d), nil)
		}
	}
	for _, cv := range asSlice(body["contents"]) {
		ct := asMap(cv)
		role, _ := ct["role"].(string)
		for i, p := range asSlice(ct["parts"]) {
			tag := ""
			if i == 0 {
				tag = "content:" + role
			}
			pm := asMap(p)
			bl.add(tag, pm, geminiPartTokens(pm), nil)
		}
	}
}

func geminiPartTokens(p map[string]any) int {
	if t, ok := p["text"].(string); ok {
		return count(t)
	}
	if fc := asMap(geminiField(p, "functionCall")); fc != nil {
		name, _ := fc["name"].(string)
		return count(name) + count(inputJSON(asMap(fc["args"])))
	}
	if fr := asMap(geminiField(p, "functionResponse")); fr != nil {
		name, _ := fr["name"].(string)
		return count(name) + countJSON(fr["response"])
	}
	if geminiField(p, "inlineData") != nil || geminiField(p, "fileData") != nil {
		return geminiImageTokens
	}
	q := make(map[string]any, len(p))
	for k, v := range p {
		if k != "thoughtSignature" && k != "thought_signature" {
			q[k] = v
		}
	}
	return countJSON(q)
}

// geminiThinks reports whether the model of a Gemini request thinks:
// Gemini 3 always does, a 2.5 model unless its thinking budget is 0.
func geminiThinks(c *Call) bool {
	if isGemini3(c.Model) {
		return true
	}
	tc := asMap(geminiField(asMap(geminiField(c.Body, "generationConfig")), "thinkingConfig"))
	b, ok := geminiField(tc, "thinkingBudget").(float64)
	return !ok || b != 0
}

// geminiPartsText is the text of a content's parts (thoughts left out).
func geminiPartsText(ct map[string]any) string {
	var ts []string
	for _, p := range asSlice(ct["parts"]) {
		pm := asMap(p)
		if t, ok := pm["text"].(string); ok && pm["thought"] != true {
			ts = append(ts, t)
		}
	}
	return strings.Join(ts, "\n")
}

// geminiTexts returns the texts of a Gemini request as the long task reads
// them (requestTexts): the system instruction, then each content's text,
// and each function response as a result of the step whose model content
// called it (marker reads a step from a model content's text).
func geminiTexts(body map[string]any, marker func(string) int) []requestText {
	var out []requestText
	if sys := asMap(geminiField(body, "systemInstruction")); sys != nil {
		out = append(out, requestText{text: geminiPartsText(sys)})
	}
	step := 0
	for _, cv := range asSlice(body["contents"]) {
		ct := asMap(cv)
		if ct["role"] == "model" {
			t := geminiPartsText(ct)
			step = marker(t)
			out = append(out, requestText{text: t})
			continue
		}
		for _, p := range asSlice(ct["parts"]) {
			pm := asMap(p)
			if fr := asMap(geminiField(pm, "functionResponse")); fr != nil {
				out = append(out, requestText{text: geminiResultText(asMap(fr["response"])), result: true, step: step})
			} else if t, ok := pm["text"].(string); ok {
				out = append(out, requestText{text: t})
			}
		}
	}
	return out
}
