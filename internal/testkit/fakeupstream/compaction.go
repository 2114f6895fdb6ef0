package fakeupstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic's threshold compaction (compact_20260112), as documented at
// https://platform.claude.com/docs/en/build-with-claude/compaction-threshold
// (read 2026-11-25):
//
//   - It needs the beta compact-2026-01-12 and is an edit of
//     context_management.edits: {"type":"compact_20260112"} with trigger
//     ({"type":"input_tokens","value":N}, default 150,000, at least
//     50,000), pause_after_compaction (default false) and instructions
//     (a prompt that replaces the default summary prompt). No other field.
//   - When the input reaches the trigger, the API summarizes the whole
//     conversation (an extra sampling step, billed), answers with a
//     compaction block {"type":"compaction","content":"<summary>"} first in
//     the content, and continues the answer from the compacted context; with
//     pause_after_compaction it stops after the block, stop_reason
//     "compaction". Streamed, the block is a content_block_start of type
//     compaction and a compaction_delta with content and encrypted_content
//     (opaque, to be sent back verbatim: the SDKs' stream accumulators copy
//     both, anthropic-sdk-typescript's BetaMessageStream since the fix of
//     its encrypted_content round trip).
//   - usage.iterations lists the sampling steps ({"type":"compaction",...}
//     then {"type":"message",...}, each with input_tokens, output_tokens and
//     the cache figures); the top-level usage is the message step's only.
//   - The client appends the answer to its messages; on later requests the
//     API drops every block before the last compaction block (after the
//     request's checks: a thinking block is bound to the bytes sent).
//     A request that carries a compaction block without declaring the
//     compact_20260112 edit is rejected.
//
// The fake's summary is deterministic: a line naming what it summarized,
// then the instructions when given (a model that follows them literally),
// so a test can see that what the instructions asked to keep was kept.

// CompactBeta is the beta header value threshold compaction needs, Compact
// its edit type.
const (
	CompactBeta = "compact-2026-01-12"
	Compact     = "compact_20260112"
)

// Compaction trigger bounds, in input tokens.
const (
	DefaultCompactTrigger = 150_000
	MinCompactTrigger     = 50_000
)

// compactEdit returns the request's compact_20260112 edit, or nil.
func compactEdit(body map[string]any) map[string]any {
	edits, _ := asMap(body["context_management"])["edits"].([]any)
	for _, ev := range edits {
		if e := asMap(ev); e["type"] == Compact {
			return e
		}
	}
	return nil
}

// checkCompactEdit rejects what the real API rejects in a compact_20260112
// edit (at index i).
func checkCompactEdit(header http.Header, i int, e map[string]any) string {
	if !hasBeta(header, CompactBeta) {
		return fmt.Sprintf("context_management.edits.%d: %s requires the beta %s", i, Compact, CompactBeta)
	}
	for k, v := range e {
		switch k {
		case "type":
		case "trigger":
			t := asMap(v)
			n, ok := t["value"].(float64)
			if t["type"] != "input_tokens" || !ok {
				return fmt.Sprintf("context_management.edits.%d.trigger: expected {\"type\":\"input_tokens\",\"value\":N}", i)
			}
			if n < MinCompactTrigger {
				return fmt.Sprintf("context_management.edits.%d.trigger.value: must be at least %d", i, MinCompactTrigger)
			}
		case "pause_after_compaction":
			if _, ok := v.(bool); !ok {
				return fmt.Sprintf("context_management.edits.%d.pause_after_compaction: expected a boolean", i)
			}
		case "instructions":
			if _, ok := v.(string); !ok && v != nil {
				return fmt.Sprintf("context_management.edits.%d.instructions: expected a string", i)
			}
		default:
			return fmt.Sprintf("context_management.edits.%d.%s: Extra inputs are not permitted", i, k)
		}
	}
	return ""
}

// checkCompactionBlocks rejects compaction blocks sent back without the
// compact_20260112 edit declared, or in a user message.
func checkCompactionBlocks(body map[string]any) string {
	declared := compactEdit(body) != nil
	for i, mv := range asSlice(body["messages"]) {
		m := asMap(mv)
		for j, b := range blocksOf(m) {
			if b["type"] != "compaction" {
				continue
			}
			if !declared {
				return fmt.Sprintf("messages.%d.content.%d: compaction blocks require the %s edit in context_management.edits", i, j, Compact)
			}
			if m["role"] != "assistant" {
				return fmt.Sprintf("messages.%d.content.%d: compaction blocks may only appear in assistant messages", i, j)
			}
			if _, ok := b["content"].(string); !ok && b["content"] != nil {
				return fmt.Sprintf("messages.%d.content.%d.content: expected a string", i, j)
			}
		}
	}
	return ""
}

// dropBeforeCompaction removes from b (a copy the server may change) every
// block before the last compaction block of its messages.
func dropBeforeCompaction(b map[string]any) bool {
	msgs := asSlice(b["messages"])
	for i := len(msgs) - 1; i >= 0; i-- {
		m := asMap(msgs[i])
		c, _ := m["content"].([]any)
		for j := len(c) - 1; j >= 0; j-- {
			if asMap(c[j])["type"] == "compaction" {
				if i == 0 && j == 0 {
					return false
				}
				m["content"] = c[j:]
				b["messages"] = msgs[i:]
				return true
			}
		}
	}
	return false
}

// compaction is what a threshold compaction did in one request.
type compaction struct {
	// Full is the body the summary step read, Compacted the body the
	// message step reads after it.
	Full, Compacted map[string]any
	Summary         string
	Paused          bool
}

// compact runs the request's compact_20260112 edit on the body the model
// reads (read), or returns nil when the edit is absent or its trigger not
// reached.
func compact(read map[string]any) *compaction {
	e := compactEdit(read)
	if e == nil {
		return nil
	}
	trigger := intOf(e["trigger"], DefaultCompactTrigger)
	n := 0
	for _, blk := range requestBlocks(APIAnthropic, read) {
		n += blk.Tokens
	}
	if n < trigger {
		return nil
	}
	msgs := asSlice(read["messages"])
	summary := fmt.Sprintf("Summary of the conversation: %d messages, %d input tokens.", len(msgs), n)
	if in, _ := e["instructions"].(string); strings.TrimSpace(in) != "" {
		summary += "\n\n" + in
	}
	var after map[string]any
	raw, _ := json.Marshal(read)
	json.Unmarshal(raw, &after)
	// The message step reads system, tools and the summary.
	after["messages"] = []any{map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "compaction", "content": summary}}}}
	paused, _ := e["pause_after_compaction"].(bool)
	return &compaction{Full: read, Compacted: after, Summary: summary, Paused: paused}
}

// block is the block an answer starts with: the summary, and an opaque
// encrypted_content the client is to send back verbatim (the fake makes
// it from the summary and does not require it back).
func (c *compaction) block() map[string]any {
	h := sha256.Sum256([]byte(c.Summary))
	return map[string]any{"type": "compaction", "content": c.Summary, "encrypted_content": "fakecompact:" + hex.EncodeToString(h[:12])}
}
