package fakeupstream

// OpenAI Responses compaction, as the real API documents it:
//
//   - Server-side compaction (https://developers.openai.com/api/docs/guides/compaction,
//     "Server-side compaction", "User journey"): a POST /v1/responses
//     request may carry context_management, an array of entries
//     {"type":"compaction","compact_threshold":N} (openai-go v3.96.0
//     ResponseNewParamsContextManagement: type required, "Currently only
//     'compaction' is supported"; compact_threshold an integer). When the
//     rendered token count crosses the threshold, the server runs a
//     compaction pass, emits a compaction output item in the same
//     response (stream), and continues inference on the compacted
//     context.
//   - Standalone compaction (the same guide; openai-go
//     ResponseService.Compact, POST /responses/compact): a body of model
//     (required), input, instructions, previous_response_id,
//     prompt_cache_key, prompt_cache_options, prompt_cache_retention and
//     service_tier (ResponseCompactParams) is answered with a
//     CompactedResponse: id, object "response.compaction", created_at,
//     output ("a list of all user messages, followed by a single
//     compaction item") and usage (the compaction pass's ResponseUsage:
//     input_tokens with input_tokens_details.cached_tokens,
//     output_tokens with output_tokens_details.reasoning_tokens,
//     total_tokens).
//   - The compaction item (ResponseCompactionItem): id, type
//     "compaction", encrypted_content, and optionally created_by. As an
//     input item (ResponseCompactionItemParam) it is type,
//     encrypted_content (required) and an optional id. It "is opaque and
//     not intended to be human-interpretable"; for stateless input-array
//     chaining the client appends the output items, compaction item
//     included, to its next input, and may drop the items before the
//     latest compaction item.
//   - Encrypted content the server cannot verify is rejected with
//     invalid_encrypted_content (reported in
//     https://github.com/openai/codex/issues/36704 for compaction items
//     "cmp_..."), and unknown parameters are rejected, as everywhere in
//     the API ("Unknown parameter").
//
// The fake's compaction item is verifiable but otherwise opaque to a
// client: its encrypted_content is "fakecmp1." + base64url(payload) + "." +
// a MAC of the payload, where the payload records what was summarized
// (CompactionPayload). A compaction item in the input is billed as its
// SummaryTokens, the tokens of the state it carries. A request whose
// threshold is crossed is billed its whole input (the compaction pass
// reads it) and, as output, the answer's tokens plus the item's
// SummaryTokens; the script sees the request as sent.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// CompactPath is the standalone compaction endpoint.
const CompactPath = "/v1/responses/compact"

// CompactionPayload is what a fake compaction item carries: what it
// summarized.
type CompactionPayload struct {
	// Items counts the input items summarized (through earlier compaction
	// items, theirs included); InputTokens their tokens.
	Items       int `json:"items"`
	InputTokens int `json:"input_tokens"`
	// CallIDs are the call_ids of the tool calls summarized, sorted.
	CallIDs []string `json:"call_ids,omitempty"`
	// SummaryTokens is what the item costs as input, and what writing it
	// cost as output: an eighth of InputTokens, at least 64 and at most
	// 8,192 (the output budget of agentctx's own summaries).
	SummaryTokens int `json:"summary_tokens"`
}

const compactionPrefix = "fakecmp1."

var compactionKey = []byte("fakeupstream compaction key")

func compactionMAC(payload []byte) string {
	m := hmac.New(sha256.New, compactionKey)
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// encodeCompaction returns the encrypted_content of a compaction item
// carrying p.
func encodeCompaction(p CompactionPayload) string {
	b, _ := json.Marshal(p)
	return compactionPrefix + base64.RawURLEncoding.EncodeToString(b) + "." + compactionMAC(b)
}

// DecodeCompaction returns what a fake compaction item's encrypted
// content carries, or false when the fake did not write it (or it was
// changed).
func DecodeCompaction(enc string) (CompactionPayload, bool) {
	var p CompactionPayload
	rest, ok := strings.CutPrefix(enc, compactionPrefix)
	if !ok {
		return p, false
	}
	body, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return p, false
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || !hmac.Equal([]byte(compactionMAC(b)), []byte(mac)) || json.Unmarshal(b, &p) != nil {
		return p, false
	}
	return p, true
}

// compactionItemTokens is what a compaction input item is billed: the
// SummaryTokens it carries (its JSON's tokens when it is not the fake's).
func compactionItemTokens(it map[string]any) int {
	enc, _ := it["encrypted_content"].(string)
	if p, ok := DecodeCompaction(enc); ok {
		return p.SummaryTokens
	}
	return countJSON(it)
}

// unknownMember returns the first member of m (in sorted order) not in
// allowed, or "".
func unknownMember(m map[string]any, allowed ...string) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			return k
		}
	}
	return ""
}

// checkCompactionItems rejects a malformed or unverifiable compaction
// item in a Responses input.
func checkCompactionItems(input any) string {
	for i, iv := range asSlice(input) {
		it := asMap(iv)
		if it["type"] != "compaction" {
			continue
		}
		if k := unknownMember(it, "type", "id", "encrypted_content", "created_by"); k != "" {
			return fmt.Sprintf("Unknown parameter: 'input[%d].%s'.", i, k)
		}
		enc, ok := it["encrypted_content"].(string)
		if !ok {
			return fmt.Sprintf("Missing required parameter: 'input[%d].encrypted_content'.", i)
		}
		if _, ok := DecodeCompaction(enc); !ok {
			return fmt.Sprintf("invalid_encrypted_content: The encrypted content for item input[%d] could not be verified.", i)
		}
	}
	return ""
}

// checkContextManagementResponses rejects a malformed context_management
// of a Responses request; it returns the compaction threshold (0: none).
func checkContextManagementResponses(body map[string]any) (int, string) {
	cm, ok := body["context_management"]
	if !ok || cm == nil {
		return 0, ""
	}
	entries, ok := cm.([]any)
	if !ok {
		return 0, "Invalid type for 'context_management': expected an array of objects."
	}
	threshold := 0
	for i, ev := range entries {
		e, ok := ev.(map[string]any)
		if !ok {
			return 0, fmt.Sprintf("Invalid type for 'context_management[%d]': expected an object.", i)
		}
		if k := unknownMember(e, "type", "compact_threshold"); k != "" {
			return 0, fmt.Sprintf("Unknown parameter: 'context_management[%d].%s'.", i, k)
		}
		switch t := e["type"].(type) {
		case nil:
			return 0, fmt.Sprintf("Missing required parameter: 'context_management[%d].type'.", i)
		case string:
			if t != "compaction" {
				return 0, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'compaction'. (context_management[%d].type)", t, i)
			}
		default:
			return 0, fmt.Sprintf("Invalid type for 'context_management[%d].type': expected a string.", i)
		}
		if v, ok := e["compact_threshold"]; ok && v != nil {
			f, ok := v.(float64)
			if !ok || f != float64(int(f)) || f < 1 {
				return 0, fmt.Sprintf("Invalid 'context_management[%d].compact_threshold': expected a positive integer.", i)
			}
			threshold = int(f)
		}
	}
	return threshold, ""
}

// compactItems summarizes items into one compaction item's payload:
// earlier compaction items fold into it.
func compactItems(items []any) CompactionPayload {
	var p CompactionPayload
	ids := map[string]bool{}
	for _, iv := range items {
		it := asMap(iv)
		if it["type"] == "compaction" {
			enc, _ := it["encrypted_content"].(string)
			if q, ok := DecodeCompaction(enc); ok {
				p.Items += q.Items
				p.InputTokens += q.InputTokens
				for _, id := range q.CallIDs {
					ids[id] = true
				}
			}
			continue
		}
		p.Items++
		if id, _ := it["call_id"].(string); id != "" {
			ids[id] = true
		}
	}
	for _, b := range requestBlocks(APIResponses, map[string]any{"input": nonCompaction(items)}) {
		p.InputTokens += b.Tokens
	}
	for id := range ids {
		p.CallIDs = append(p.CallIDs, id)
	}
	sort.Strings(p.CallIDs)
	p.SummaryTokens = min(max(p.InputTokens/8, 64), 8192)
	return p
}

func nonCompaction(items []any) []any {
	out := make([]any, 0, len(items))
	for _, iv := range items {
		if asMap(iv)["type"] != "compaction" {
			out = append(out, iv)
		}
	}
	return out
}

// inputItems returns a Responses input as items (a string is one user
// message).
func inputItems(in any) []any {
	if s, ok := in.(string); ok {
		return []any{map[string]any{"type": "message", "role": "user", "content": s}}
	}
	return asSlice(in)
}

// renderedTokens counts a Responses request as the prompt cache sees it.
func renderedTokens(body map[string]any) int {
	n := 0
	for _, b := range requestBlocks(APIResponses, body) {
		n += b.Tokens
	}
	return n
}

// thresholdCompaction returns the compaction item a Responses request's
// context_management produces (nil when its threshold is not crossed),
// and its summary tokens.
func (s *Server) thresholdCompaction(body map[string]any) (map[string]any, int) {
	thr, _ := checkContextManagementResponses(body)
	if thr == 0 || renderedTokens(body) <= thr {
		return nil, 0
	}
	p := compactItems(inputItems(body["input"]))
	return map[string]any{"id": s.id("cmp"), "type": "compaction", "encrypted_content": encodeCompaction(p)}, p.SummaryTokens
}

// compactParams are the members of a POST /v1/responses/compact body.
var compactParams = []string{"model", "input", "instructions", "previous_response_id", "prompt_cache_key",
	"prompt_cache_options", "prompt_cache_retention", "service_tier"}

// checkCompact applies the real API's rules to a compaction request.
func (s *Server) checkCompact(body map[string]any, size int) string {
	if size/4 > s.opts.ContextWindow {
		return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", size/4, s.opts.ContextWindow)
	}
	if k := unknownMember(body, compactParams...); k != "" {
		return fmt.Sprintf("Unknown parameter: '%s'.", k)
	}
	if m, _ := body["model"].(string); m == "" {
		return "Missing required parameter: 'model'."
	}
	if id, _ := body["previous_response_id"].(string); id != "" {
		return fmt.Sprintf("Previous response with id '%s' not found.", id) // the fake stores nothing
	}
	switch in := body["input"].(type) {
	case string:
	case []any:
		if r := responsesPairing(in); r != "" {
			return r
		}
		return checkCompactionItems(in)
	default:
		return "Missing required parameter: 'input'."
	}
	return ""
}

// serveCompact answers POST /v1/responses/compact: the input's user
// messages, then one compaction item for everything, and the compaction
// pass's usage (its input billed through the prompt cache like any
// request of the key and model, its output the item's summary tokens).
func (s *Server) serveCompact(w http.ResponseWriter, r *http.Request) {
	raw := readBody(r)
	rec := Record{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), API: APIResponses, Size: len(raw), Body: raw}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		rec.Rejected = "invalid JSON: " + err.Error()
	} else if reason := s.checkCompact(body, len(raw)); reason != "" {
		rec.Rejected = reason
	}
	s.record(rec)
	if rec.Rejected != "" {
		s.reject(r.Header, body)
		writeErr(w, APIResponses, http.StatusBadRequest, "invalid_request_error", rec.Rejected)
		return
	}
	items := inputItems(body["input"])
	p := compactItems(items)
	c := s.call(APIResponses, r, body, raw)
	c.respCompaction = true
	u := s.usage(c, Reply{OutputTokens: p.SummaryTokens})
	var output []any
	for _, iv := range items {
		it := asMap(iv)
		if it["role"] != "user" || it["type"] != nil && it["type"] != "message" {
			continue
		}
		content := it["content"]
		if str, ok := content.(string); ok {
			content = []any{map[string]any{"type": "input_text", "text": str}}
		}
		output = append(output, map[string]any{"id": s.id("msg"), "type": "message", "status": "completed", "role": "user", "content": content})
	}
	output = append(output, map[string]any{"id": s.id("cmp"), "type": "compaction", "encrypted_content": encodeCompaction(p)})
	in := u.Input()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": s.id("resp"), "object": "response.compaction", "created_at": s.opts.Now().Unix(), "output": output,
		"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
			"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + u.Output},
	})
}
