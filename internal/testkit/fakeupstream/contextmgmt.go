package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic context editing, applied server-side as the real API does:
// after the request's checks (the preserved-thinking prefix check binds a
// thinking block to the bytes the client sent), before the "model" reads
// the prompt, and before it is billed: the edited prompt is what is
// counted and cached, so a clearing breaks the prompt cache from the first
// cleared block.

// ContextManagementBeta is the beta header value context_management needs.
const ContextManagementBeta = "context-management-2025-06-27"

// The context-editing strategies.
const (
	ClearToolUses = "clear_tool_uses_20250919"
	ClearThinking = "clear_thinking_20251015"
)

// ClearedPlaceholder is the text a cleared tool result is replaced with.
const ClearedPlaceholder = "[tool result cleared by context management]"

func hasBeta(h http.Header, beta string) bool {
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// checkContextManagement rejects what the real API rejects in a
// context_management object: an edit without its beta (context editing's,
// or compaction's: compaction.go), an unknown strategy, clear_thinking
// after another strategy or without thinking on.
func checkContextManagement(header http.Header, body map[string]any) string {
	cm, ok := body["context_management"]
	if !ok {
		return ""
	}
	edits, ok := asMap(cm)["edits"].([]any)
	if !ok {
		return "context_management.edits: Field required"
	}
	for i, ev := range edits {
		e := asMap(ev)
		if e["type"] == Compact {
			if r := checkCompactEdit(header, i, e); r != "" {
				return r
			}
			continue
		}
		if !hasBeta(header, ContextManagementBeta) {
			return "context_management: Extra inputs are not permitted (this feature requires the beta " + ContextManagementBeta + ")"
		}
		switch e["type"] {
		case ClearToolUses:
			for _, k := range []string{"trigger", "keep", "clear_at_least"} {
				if v, ok := e[k]; ok {
					if _, ok := asMap(v)["value"].(float64); !ok {
						return fmt.Sprintf("context_management.edits.%d.%s: value required", i, k)
					}
				}
			}
		case ClearThinking:
			if i != 0 {
				return fmt.Sprintf("context_management.edits.%d: %s must be the first edit", i, ClearThinking)
			}
			th := asMap(body["thinking"])
			if th == nil || th["type"] == "disabled" {
				return fmt.Sprintf("context_management.edits.%d: %s requires thinking to be enabled", i, ClearThinking)
			}
		default:
			return fmt.Sprintf("context_management.edits.%d.type: unknown strategy %v", i, e["type"])
		}
	}
	return ""
}

// AppliedEdit is one edit the server applied (the response's
// context_management.applied_edits).
type AppliedEdit struct {
	Type                 string `json:"type"`
	ClearedToolUses      int    `json:"cleared_tool_uses,omitempty"`
	ClearedThinkingTurns int    `json:"cleared_thinking_turns,omitempty"`
	ClearedInputTokens   int    `json:"cleared_input_tokens"`
}

// applyContextManagement returns the body the model reads after the
// request's context_management edits (nil when they change nothing), and
// the edits applied. Every block before the last compaction block is
// dropped first (compaction.go). body is not modified.
func applyContextManagement(body map[string]any) (map[string]any, []AppliedEdit) {
	edits, _ := asMap(body["context_management"])["edits"].([]any)
	if len(edits) == 0 {
		return nil, nil
	}
	var b map[string]any
	raw, _ := json.Marshal(body)
	json.Unmarshal(raw, &b) // a deep copy
	dropped := dropBeforeCompaction(b)
	msgs := asSlice(b["messages"])
	var applied []AppliedEdit
	for _, ev := range edits {
		e := asMap(ev)
		var a AppliedEdit
		switch e["type"] {
		case ClearThinking:
			a = clearThinking(msgs, e)
		case ClearToolUses:
			a = clearToolUses(b, msgs, e)
		}
		if a.Type != "" {
			applied = append(applied, a)
		}
	}
	if applied == nil && !dropped {
		return nil, nil
	}
	return b, applied
}

func intOf(v any, def int) int {
	if f, ok := asMap(v)["value"].(float64); ok {
		return int(f)
	}
	return def
}

// clearThinking removes the thinking of all but the last keep assistant
// turns (default 1; "all" keeps everything).
func clearThinking(msgs []any, e map[string]any) AppliedEdit {
	if e["keep"] == "all" {
		return AppliedEdit{}
	}
	keep := intOf(e["keep"], 1)
	var turns []map[string]any
	for _, mv := range msgs {
		if m := asMap(mv); m["role"] == "assistant" {
			turns = append(turns, m)
		}
	}
	a := AppliedEdit{Type: ClearThinking}
	for i := 0; i < len(turns)-keep; i++ {
		c, ok := turns[i]["content"].([]any)
		if !ok {
			continue
		}
		kept := c[:0:0]
		n := 0
		for _, bv := range c {
			bm := asMap(bv)
			if bm["type"] == "thinking" || bm["type"] == "redacted_thinking" {
				n += blockTokens(bm)
				continue
			}
			kept = append(kept, bv)
		}
		if len(kept) < len(c) {
			turns[i]["content"] = kept
			a.ClearedThinkingTurns++
			a.ClearedInputTokens += n
		}
	}
	if a.ClearedThinkingTurns == 0 {
		return AppliedEdit{}
	}
	return a
}

// clearToolUses clears, once the prompt is over the trigger, the results of
// the oldest tool uses (those of exclude_tools aside) but the last keep,
// and their inputs with clear_tool_inputs; nothing when that would clear
// fewer than clear_at_least tokens.
func clearToolUses(b map[string]any, msgs []any, e map[string]any) AppliedEdit {
	uses, results := toolUsesOf(msgs)
	if !clearTriggered(b, len(uses), asMap(e["trigger"])) {
		return AppliedEdit{}
	}
	excluded := map[string]bool{}
	for _, n := range asSlice(e["exclude_tools"]) {
		s, _ := n.(string)
		excluded[s] = true
	}
	var cands []toolUse
	for _, u := range uses {
		if !excluded[u.name] {
			cands = append(cands, u)
		}
	}
	keep := intOf(e["keep"], 3)
	a := AppliedEdit{Type: ClearToolUses}
	type change struct {
		m        map[string]any
		key      string
		val      any
		freedTok int
	}
	var changes []change
	for i := 0; i < len(cands)-keep; i++ {
		u := cands[i]
		id, _ := u.block["id"].(string)
		r := results[id]
		if r == nil || textOf(r["content"]) == ClearedPlaceholder {
			continue
		}
		freed := blockTokens(r) - count(ClearedPlaceholder)
		changes = append(changes, change{r, "content", ClearedPlaceholder, freed})
		if clearsInputs(e, u.name) {
			changes = append(changes, change{u.block, "input", map[string]any{}, count(inputJSON(asMap(u.block["input"])))})
		}
		a.ClearedToolUses++
	}
	for _, c := range changes {
		a.ClearedInputTokens += c.freedTok
	}
	if a.ClearedToolUses == 0 || a.ClearedInputTokens < intOf(e["clear_at_least"], 0) {
		return AppliedEdit{}
	}
	for _, c := range changes {
		c.m[c.key] = c.val
	}
	return a
}

// toolUse is a tool_use block of a request, and its tool's name.
type toolUse struct {
	block map[string]any
	name  string
}

// toolUsesOf returns the tool uses of msgs, in order, and their results by
// tool use id.
func toolUsesOf(msgs []any) (uses []toolUse, results map[string]map[string]any) {
	results = map[string]map[string]any{}
	for _, mv := range msgs {
		m := asMap(mv)
		c, _ := m["content"].([]any)
		for _, bv := range c {
			bm := asMap(bv)
			switch bm["type"] {
			case "tool_use":
				name, _ := bm["name"].(string)
				uses = append(uses, toolUse{bm, name})
			case "tool_result":
				id, _ := bm["tool_use_id"].(string)
				results[id] = bm
			}
		}
	}
	return uses, results
}

// clearTriggered reports whether request b, with uses tool uses, is over
// the trigger of a clear_tool_uses edit: a number of tool uses, or of
// input tokens (100,000 unless given).
func clearTriggered(b map[string]any, uses int, trigger map[string]any) bool {
	switch trigger["type"] {
	case "tool_uses":
		return uses >= intOf(trigger, 0)
	default:
		n := 0
		for _, blk := range requestBlocks(APIAnthropic, b) {
			n += blk.Tokens
		}
		return n >= intOf(trigger, 100_000)
	}
}

// clearsInputs reports whether edit e clears the inputs of the tool
// named name too: clear_tool_inputs true, or a list that names it.
func clearsInputs(e map[string]any, name string) bool {
	switch v := e["clear_tool_inputs"].(type) {
	case bool:
		return v
	case []any:
		for _, n := range v {
			if n == name {
				return true
			}
		}
	}
	return false
}

// ThinkingTotals are the fake's figures on signed thinking and context
// editing.
type ThinkingTotals struct {
	// ThinkingBlocks counts the thinking blocks received in accepted
	// Anthropic requests; InvalidThinking those that failed the prefix
	// check (accepted only with drop_block, and dropped);
	// DropBlockRequests the accepted requests that asked for drop_block.
	ThinkingBlocks    int `json:"thinking_blocks"`
	InvalidThinking   int `json:"invalid_thinking_blocks"`
	DropBlockRequests int `json:"drop_block_requests"`
	// ContextEdits counts the context-management edits applied,
	// ClearedToolUses and ClearedInputTokens what they cleared.
	ContextEdits       int `json:"context_edits"`
	ClearedToolUses    int `json:"cleared_tool_uses"`
	ClearedInputTokens int `json:"cleared_input_tokens"`
	// Compactions counts the threshold compactions run (compaction.go);
	// their summary steps are billed in the totals like any request's.
	Compactions int `json:"compactions"`
}

// countThinking adds an accepted request's thinking blocks to the bill.
func (s *Server) countThinking(header http.Header, body map[string]any) {
	var t ThinkingTotals
	for _, mv := range asSlice(body["messages"]) {
		m := asMap(mv)
		if m["role"] != "assistant" {
			continue
		}
		for _, b := range blocksOf(m) {
			if b["type"] == "thinking" || b["type"] == "redacted_thinking" {
				t.ThinkingBlocks++
			}
		}
	}
	if dropBlock(body) {
		t.DropBlockRequests = 1
		invalidThinking(body, &t.InvalidThinking)
	}
	s.billing.mu.Lock()
	defer s.billing.mu.Unlock()
	add := func(x ThinkingTotals) ThinkingTotals {
		x.ThinkingBlocks += t.ThinkingBlocks
		x.InvalidThinking += t.InvalidThinking
		x.DropBlockRequests += t.DropBlockRequests
		return x
	}
	s.billing.total.ThinkingTotals = add(s.billing.total.ThinkingTotals)
	k := sessionOf(header, body)
	st := s.billing.sessions[k]
	st.ThinkingTotals = add(st.ThinkingTotals)
	s.billing.sessions[k] = st
}

// checkEditedWindow applies the context window to a request with context
// management: to the prompt the model reads after the edits (a raw body
// over the window is accepted when the server's clearing brings it under),
// estimated as the other requests are, a quarter of the bytes.
func (s *Server) checkEditedWindow(body, read map[string]any, size int) string {
	if body["context_management"] == nil {
		return ""
	}
	if read != nil {
		if b, err := json.Marshal(read); err == nil {
			size = len(b)
		}
	}
	if size/4 > s.opts.ContextWindow {
		return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", size/4, s.opts.ContextWindow)
	}
	return ""
}
