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
// The strict fake (internal/testkit/fakeupstream, compaction.go) implements
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
// newest results) stay client-side, and compactions go to the provider
// (see Native compaction below). Other APIs fall back
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
// way to keep them after trimming), by internal/lib/thinking.Fix, the one
// implementation the proxy (fixThinking) and anthropicx share.
//
// # Native compaction
//
// When agentctx compacts an Anthropic request in native mode, and the
// request's count reaches the API's smallest trigger (50,000 input tokens,
// with a 10% margin; below it, the compaction stays client-side), the
// request goes uncompacted: the messages the session's last request sent,
// in their places (every edit placed then stays, so no thinking block is
// invalidated and the prompt cache holds), then the client's new ones
// (ctxedit.Uncompacted; when the last request's messages are not in the
// client's places, after a client-side compaction, the compaction stays
// client-side), with a compact_20260112 edit appended whose trigger is that smallest one (and
// no clearing edit: the server summarizes what it reads, all of it) and
// whose instructions are agentctx's summary prompt followed by the
// "## Stored originals" section of agentctx's own summary (pointers to the
// originals it stored, so the read tools still reach what the provider's
// summary replaced). agentctx still archives the summarized messages,
// counts the compaction and reports it. The API summarizes after its
// prefix check, so no thinking block is invalidated.
//
// The answer starts with the compaction block: the proxy remembers it as
// relayed (content and encrypted_content), with the messages that request
// sent. On every later request of the session that carries the block:
//
//   - the block is restored where the client dropped its content (Claude
//     Code 2.1.330 sends {"type":"compaction","content":""} without
//     encrypted_content: its stream handling skips compaction_delta);
//   - the messages before it go as that request sent them (a thinking
//     block after the compaction block is bound to them as sent);
//   - the Engine is given the history from the block on, as the server
//     reads it, so its counts, decisions and session state follow what the
//     model reads (its summary of the messages the provider summarized no
//     longer matches the history, and is dropped);
//   - the compact_20260112 edit is declared (a request carrying a
//     compaction block must), with a trigger no request reaches
//     (ctxedit.DeclaredTrigger): the next compaction is agentctx's
//     decision again, made the same way.
//
// The usage of an answer that compacted is not fed to the Engine: its
// top-level figures are the step after the summary's, not the request the
// Engine counted. The same helpers (internal/lib/ctxedit) serve anthropicx.

import (
	"bytes"
	"strings"
	"sync"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
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
	if p := x.prepared; (native || x.thinkingOn) && (p == nil || !p.Compacted || x.compactInstr != "") {
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
	if x.compactInstr != "" {
		// The server summarizes what it reads: sent whole, it reads what
		// agentctx counted (clearing first could leave it under the
		// trigger), and the summary covers the results themselves.
		return nil
	}
	from := 0
	if x.cut > 0 {
		from = x.cut // the server clears in what it reads: from the compaction block on
	}
	edit := ctxedit.ClearEdit(a.out[from:], clearedIDs(in, a.out, held))
	x.native = edit != nil
	return edit
}

// nativeCompaction is a session's last provider compaction (ContextNative,
// Anthropic): the block relayed, and the messages of the request that
// produced it, as sent.
type nativeCompaction struct {
	mu     sync.Mutex
	block  []byte
	prefix []agentctx.Message
	enc    [][]byte
}

func (n *nativeCompaction) get() ([]byte, []agentctx.Message, [][]byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.block, n.prefix, n.enc
}

// rememberCompaction records a compaction block the upstream sent in
// answer to x, before the bytes that complete it reach the client.
func (s *Server) rememberCompaction(x *exchange, block []byte) {
	if x.session == "" || x.api != APIAnthropic {
		return
	}
	st := s.stats.get(x.session)
	st.ncomp.mu.Lock()
	st.ncomp.block, st.ncomp.prefix, st.ncomp.enc = block, x.sentMsgs, x.sentEnc
	st.ncomp.mu.Unlock()
	st.mu.Lock()
	st.ProviderCompactions++
	st.mu.Unlock()
}

// compactionCut is an Anthropic request's history cut at its last
// compaction block (native mode).
type compactionCut struct {
	at       int                // the index of the message holding the block
	prefix   []agentctx.Message // the messages before it, to send
	tail     []agentctx.Message // the messages from it on, the block restored
	restored bool
}

// cutAtCompaction returns the cut of msgs at their last compaction block,
// or nil when they hold none.
func (s *Server) cutAtCompaction(x *exchange, msgs []agentctx.Message) *compactionCut {
	k := ctxedit.CompactionIndex(msgs)
	if k < 0 {
		return nil
	}
	c := &compactionCut{at: k, prefix: msgs[:k], tail: msgs[k:]}
	block, prefix, _ := s.stats.get(x.session).ncomp.get()
	if len(prefix) == k {
		// The messages before the block, as the request that produced it
		// sent them (the client's own may differ where that request held
		// or placed edits); the roles must agree.
		same := true
		for i := range prefix {
			if prefix[i].Role != msgs[i].Role {
				same = false
				break
			}
		}
		if same {
			c.prefix = ctxedit.AsSent(msgs[:k], prefix)
			if m, ok := ctxedit.Restore(msgs[k], block); ok {
				c.tail = append([]agentctx.Message{m}, msgs[k+1:]...)
				c.restored = true
			}
		}
	}
	return c
}

// join returns what the Engine prepared for the cut history, as the whole
// list to send: the prefix, then the Engine's messages.
func (c *compactionCut) join(p *Prepared) *Prepared {
	q := *p
	tail := p.Messages
	if p.Unchanged || tail == nil {
		tail = c.tail
	}
	q.Messages = append(append(make([]agentctx.Message, 0, len(c.prefix)+len(tail)), c.prefix...), tail...)
	q.Sources, q.Facts = c.joinSources(p), nil
	q.Unchanged = false // the compaction edit is declared on every request that carries the block
	return &q
}

// nativeCompactionFor returns the instructions of a provider compaction
// when the Engine compacted an Anthropic request it counted at the API's
// smallest trigger or more (with a 10% margin: the trigger is the API's
// count), in native mode (see the notes above); "" when the compaction
// stays client-side.
func (s *Server) nativeCompactionFor(p *Prepared) string {
	if s.opts.ContextManagement != ContextNative || p == nil || !p.Compacted || p.TokensBefore < ctxedit.MinCompactTrigger*11/10 {
		return ""
	}
	var summary string
	for i := range p.Messages {
		if t := messageText(&p.Messages[i]); p.Messages[i].Role == agentctx.RoleUser && strings.HasPrefix(t, compact.SummaryTitle) {
			summary = t
			break
		}
	}
	return ctxedit.Instructions(summary)
}

// compactionEdits returns the compact_20260112 edit of a request: the one
// asking for a compaction, or the declaration a request carrying a
// compaction block needs; nil when neither.
func compactionEdit(x *exchange) []byte {
	switch {
	case x.compactInstr != "":
		return ctxedit.CompactEdit(ctxedit.MinCompactTrigger, x.compactInstr)
	case x.cut >= 0:
		return ctxedit.CompactEdit(ctxedit.DeclaredTrigger, "")
	}
	return nil
}

// anthropicCompacts reports whether an Anthropic request is large enough
// that, compacted in native mode, the provider summarizes it (see
// nativeCompactionFor), as far as the request an Engine hands a
// summarizer tells: the body last forwarded for the session (Prefix, kept
// near the trigger), from its last compaction block on when it holds one
// (the server reads no further back; Claude Code writes system and tools
// after the messages), its bytes over 4, which overestimates the tokens
// the Engine counts by JSON's syntax, and which the request being
// compacted outgrows. Without a prefix: false.
func anthropicCompacts(req *Request) bool {
	p := req.Prefix
	if i := bytes.LastIndex(p, []byte(`{"type":"compaction"`)); i >= 0 {
		p = p[i:]
	}
	return len(p)/4 >= ctxedit.MinCompactTrigger*11/10
}
