package proxy

// # Edits and signed thinking
//
// Recent Claude models check, for every thinking or redacted_thinking
// block sent back, that system, tools and every message before it are what
// they were when the block was produced (Anthropic's "preserved thinking:
// prefix checks"). A failed check is a 400, or, with the beta
// thinking-binding-controls-2026-08-01 and
// thinking.block_binding.prefix_mismatch_behavior "drop_block", the block
// and every later thinking block are dropped. While thinking is on, the
// final assistant message of a tool loop must start with a thinking block,
// so an edit before the open turn's thinking can only be sent with
// drop_block. A coding agent's task is usually one open turn, so every
// client-side edit of an already-sent message (a prune batch, an offload of
// an old result, a compaction) invalidates the open turn's thinking, and,
// once sent, the invalid block stays in the history of the turn.
//
// Server-side context management runs after the prefix check (the
// binding is to the bytes the client sent), so it is thinking-safe by
// construction:
//
//   - Context editing (beta context-management-2025-06-27):
//     context_management.edits holds clear_tool_uses_20250919 (trigger
//     input_tokens|tool_uses, default 100,000 input tokens; keep tool_uses,
//     default 3; clear_at_least input_tokens; exclude_tools; clear_tool_inputs)
//     and clear_thinking_20251015 (keep thinking_turns or "all"; it must be
//     listed first). The API clears the oldest tool results in order and
//     puts a placeholder in their place; the response reports
//     context_management.applied_edits with cleared_tool_uses,
//     cleared_thinking_turns and cleared_input_tokens. Clearing invalidates
//     the prompt cache from the first cleared block: the edited prompt is
//     what is billed and cached.
//   - Threshold compaction
//     (https://platform.claude.com/docs/en/build-with-claude/compaction-threshold,
//     read 2026-11-25): beta compact-2026-01-12; the edit
//     {"type":"compact_20260112"} in context_management.edits, with
//     trigger {"type":"input_tokens","value":N} (default 150,000, at least
//     50,000), pause_after_compaction (default false) and instructions
//     (replaces the default summary prompt). Once the input reaches the
//     trigger, the API summarizes the whole conversation in an extra
//     sampling step and answers with a compaction block
//     {"type":"compaction","content":summary} first (streamed as
//     content_block_start then a compaction_delta carrying content and an
//     opaque encrypted_content to send back verbatim), then continues the
//     answer, or stops with stop_reason "compaction" when paused. The
//     client appends the answer; on later requests the API drops every
//     block before the compaction block. usage.iterations lists the
//     compaction step and the message step; the top-level usage is the
//     message step's only, while both are billed.
//   - On-demand compaction
//     (https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand):
//     beta compact-2026-09-04; a request with "compaction":{"type":
//     "summarize"} answers with one signed compaction block and
//     stop_reason "compaction", no reply; the block goes first in messages
//     in place of what it summarized. It cannot be combined with
//     context_management in one request, and the same system and tools
//     must be sent (thinking kept after the block stays valid only if they
//     match). Documented as the one to prefer where available.
//   - OpenAI Responses compaction (context_management with
//     compact_threshold, /responses/compact) is the rsp branch's.
//
// The strict fake (internal/fakeupstream, compaction.go) implements
// threshold compaction as documented: the block, the dropped prefix, the
// iterations billed, the betas required, and the rejections (a trigger
// under 50,000, an unknown field, a compaction block sent back without
// the edit declared).
//
// What the providers do not do is keep what they clear readable, count
// offline, or work across providers: agentctx keeps deciding, storing and
// counting, and only the application of the decision moves.
//
// # Modes
//
// ContextClient (the default until measured) sends every edit in the
// messages. ContextNative, for Anthropic, sends the decisions that would
// change a message the session already sent before a thinking block as a
// clear_tool_uses_20250919 edit appended to context_management.edits (the
// client's own edits, such as Claude Code's clear_thinking_20251015, stay
// first and untouched), with the beta added: those messages go as they were
// last sent, so no thinking block is invalidated and the prompt cache
// breaks only where the server clears. Edits of messages not yet sent (the
// newest results) and compactions stay client-side. Other APIs fall back
// to client-side edits.
//
// The mapping is an approximation: the server clears the oldest tool uses
// and keeps the last N, so agentctx sends exclude_tools (the tools none of
// whose results it cleared) and keep (the candidates after the longest
// run, oldest first, of uses it cleared). The server therefore clears a
// subset of what agentctx decided, never a result agentctx did not store;
// a decision after the first kept candidate waits, sent whole, until the
// run reaches it (pruning by age clears oldest first, so this is rare).
// No clear_at_least is sent: agentctx batches its own decisions, so the
// cleared set, and with it the cache, changes only with a new batch.
//
// # Thinking of ended turns
//
// Whatever the mode, a client-side edit before an ended turn's thinking
// invalidates it; the thinking of those turns is removed (the documented
// way to keep them after trimming), by internal/thinking.Fix, the one
// implementation the proxy (fixThinking) and anthropicx share.
//
// # Native compaction: the design, not yet built
//
// When agentctx would compact in native mode, the request would go as
// last sent (held edits, as for clearing) with a compact_20260112 edit
// appended whose trigger is the request's input (at least 50,000: below
// that, the compaction stays client-side) and whose instructions carry
// agentctx's summary prompt and its "## Stored originals" pointers, so the
// read tools still reach what the summary replaced (agentctx stores every
// original as it first sees it). Every later request of the session then
// declares the edit with a trigger beyond the window (a request carrying a
// compaction block must declare it), and the proxy cuts the history it
// gives the engine at the compaction block, as the server does, so that
// counts and session state follow what the model reads. Measured with
// real Claude Code 2.1.330 against the fake (an edit injected in front of
// it): Claude Code keeps the block in its history and sends it back first
// in the assistant message, but with "content":"" and no
// encrypted_content (its own stream handling skips compaction_delta), so
// the proxy would have to restore the block it relayed before sending it
// on; and a thinking block after it is bound to the block as sent. Until
// then, native mode's compactions are agentctx's own (client-side).

import (
	"bytes"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/ctxedit"
)

// ContextManagement says where edits are applied.
type ContextManagement string

const (
	// ContextClient applies every edit in the messages sent (the zero
	// value).
	ContextClient ContextManagement = "client"
	// ContextNative delegates the edits of already-sent messages to the
	// provider's own context management where it has one (Anthropic
	// context editing), and applies the rest in the messages.
	ContextNative ContextManagement = "native"
)

// ContextManagementBeta is the beta Anthropic's context editing needs, and
// ClearToolUses the edit agentctx appends.
const (
	ContextManagementBeta = ctxedit.Beta
	ClearToolUses         = ctxedit.ClearToolUses
)

// sentList is what a session's last edited request sent: its messages and
// their encodings, by position.
type sentList struct {
	mu   sync.Mutex
	msgs []agentctx.Message
	enc  [][]byte
}

func (l *sentList) get() ([]agentctx.Message, [][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msgs, l.enc
}

func (l *sentList) set(msgs []agentctx.Message, enc [][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs, l.enc = msgs, enc
}

// lastThinking returns the index of the last message to send that holds a
// thinking block, or -1.
func lastThinking(a *alignment) int {
	for j := len(a.out) - 1; j >= 0; j-- {
		if hasThinking(&a.out[j]) {
			return j
		}
	}
	return -1
}

// toolResultIDs returns the tool_use_id of each tool_result of a message,
// in order; nil when it has a block of another kind.
func toolResultIDs(m *agentctx.Message) []string {
	if !onlyToolResults(m) {
		return nil
	}
	var ids []string
	for _, b := range m.Content.Blocks() {
		ids = append(ids, b.ToolUseID)
	}
	return ids
}

// holdEdits puts back, in the messages to send before the last thinking
// block, each message of tool results that the Engine changed since the
// session's last request sent it (a new batch of pruned or offloaded old
// results), as it was sent: sending the change would invalidate every
// thinking block after it. It returns the ids of the tool calls whose
// results were held (the decisions not applied in the messages). The
// messages at a position the last request did not send, and lists whose
// messages the last request did not send in the same places (a
// compaction), are left as they are.
func holdEdits(a *alignment, inEnc [][]byte, lastMsgs []agentctx.Message, lastEnc [][]byte) []string {
	lt := lastThinking(a)
	var held []string
	for j := 0; j < lt && j < len(lastEnc); j++ {
		if a.match[j] >= 0 && a.match[j] == j {
			continue // the client's own message
		}
		if bytes.Equal(canonical(a.outEnc[j]), canonical(lastEnc[j])) {
			continue // sent so last time: sticky
		}
		ids := toolResultIDs(&a.out[j])
		prev := toolResultIDs(&lastMsgs[j])
		if ids == nil || !equalStrings(ids, prev) {
			break // another list than last time's: not a held edit
		}
		ob, pb := a.out[j].Content.Blocks(), lastMsgs[j].Content.Blocks()
		for i := range ob {
			if !sameBlock(ob[i], pb[i]) {
				held = append(held, ob[i].ToolUseID)
			}
		}
		// As sent, without the breakpoints it had then: the client's
		// breakpoints have moved on since, and there are at most four.
		enc, m := lastEnc[j], lastMsgs[j]
		if j < len(inEnc) && bytes.Equal(inEnc[j], enc) {
			a.match[j] = j // the client's bytes, as they came
		} else {
			a.match[j] = -1
			if bytes.Contains(enc, cacheKey) {
				enc = appendStripped(nil, enc, false)
				var err error
				if m, err = agentctx.DecodeMessage(enc); err != nil {
					break
				}
			}
		}
		a.out[j], a.outEnc[j], a.outHash[j], a.outBreaks[j] = m, enc, 0, -1
	}
	if held != nil {
		a.firstChanged = len(a.out)
		for j := range a.out {
			if a.match[j] != j {
				a.firstChanged = j
				break
			}
		}
	}
	return held
}

func sameBlock(x, y agentctx.Block) bool {
	bx, err1 := x.MarshalJSON()
	by, err2 := y.MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(canonical(bx), canonical(by))
}

func equalStrings(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// clearedIDs returns the ids of the tool calls whose results the messages
// to send changed from the client's (a placeholder or a reference), plus
// held.
func clearedIDs(in, out []agentctx.Message, held []string) map[string]bool {
	return ctxedit.ClearedIDs(in, out, held, sameBlock)
}

// ThinkingStats are a session's figures on signed thinking and context
// management (GET /agentctx/stats).
type ThinkingStats struct {
	// ThinkingSent counts the thinking blocks the client sent (Anthropic),
	// ThinkingForwarded those the proxy forwarded.
	ThinkingSent      int `json:"thinking_sent"`
	ThinkingForwarded int `json:"thinking_forwarded"`
	// NativeEdits counts the requests sent with a context-management edit
	// of agentctx's (ContextNative); HeldResults the tool results sent as
	// last sent instead of edited in the messages (see holdEdits).
	NativeEdits int `json:"native_edits"`
	HeldResults int `json:"held_results"`
	// DeferredResults counts the Engine's decisions deferred because the
	// result lay before the open turn's thinking (Request.Binding): not
	// applied, and not recorded as applied.
	DeferredResults int `json:"deferred_results"`
}

// recordThinking adds an exchange's figures; s.mu is held.
func (s *sessionStats) recordThinking(x *exchange) {
	s.ThinkingSent += x.thinkIn
	s.ThinkingForwarded += x.thinkOut
	s.HeldResults += x.held
	if x.prepared != nil {
		s.DeferredResults += x.prepared.Deferred
	}
	if x.native {
		s.NativeEdits++
	}
}

// countThinking counts the thinking and redacted_thinking blocks of
// assistant messages.
func countThinking(msgs []agentctx.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Role != agentctx.RoleAssistant {
			continue
		}
		for _, b := range msgs[i].Content.Blocks() {
			if isThinking(b) {
				n++
			}
		}
	}
	return n
}

// placeEdits decides, for an Anthropic request, where the Engine's edits
// go (see the package notes above): with ContextNative, edits of messages
// already sent before a thinking block are held and the returned
// context-management edit asks the server to clear those results; with
// ContextClient, they are held while the open turn carries thinking (they
// go with the turn's end or with a compaction), and nil is returned.
func (s *Server) placeEdits(a *alignment, in []agentctx.Message, inEnc [][]byte, x *exchange) []byte {
	if x.session == "" {
		return nil
	}
	native := s.opts.ContextManagement == ContextNative
	var held []string
	if p := x.prepared; (native || x.thinkingOn) && (p == nil || !p.Compacted) {
		o := openTurn(a.out)
		if native || o >= 0 && hasThinking(&a.out[o]) {
			lastMsgs, lastEnc := s.stats.get(x.session).last.get()
			held = holdEdits(a, inEnc, lastMsgs, lastEnc)
			x.held = len(held)
		}
	}
	if !native {
		return nil
	}
	edit := ctxedit.ClearEdit(a.out, clearedIDs(in, a.out, held))
	x.native = edit != nil
	return edit
}
