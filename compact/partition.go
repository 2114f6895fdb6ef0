package compact

import (
	"github.com/agentctx/agentctx"
)

// Parts is a message list divided into head, middle and tail (seed 002
// F-003). The three slices are consecutive windows of the list they were
// made from (Head is msgs[:len(Head)], and so on), share its memory, and
// must be treated as read-only; their capacity is cut to their length, so
// appending to one never writes into the next.
type Parts struct {
	// Head is the leading run of system messages, always kept.
	Head []agentctx.Message
	// Middle is what compaction summarizes and archives.
	Middle []agentctx.Message
	// Tail is the most recent messages, kept whole.
	Tail []agentctx.Message
}

// Split divides msgs into head, middle and tail with the budget of
// opts.Limit × opts.TailRatio tokens for the tail (seed 002 F-003):
//
//   - Head is the leading run of role "system" messages.
//   - Tail is found by scanning from the end and adding whole messages until
//     their tokens reach the budget (≥); the last message added is kept
//     whole even when it overshoots, and the scan never enters the head.
//   - Middle is everything in between.
//
// The last message is always in the tail: a list of one message (even a
// system message) is all tail, with head and middle empty, and a budget of
// zero keeps exactly the last message.
//
// Beyond the seed, the cut between middle and tail never separates a tool
// call from its result: when the tail would begin with a message holding
// tool results (a tool_result block or a role "tool" message) whose call is
// in an earlier message, the cut moves back until it does not, so the
// calling assistant message (with its thinking blocks, and every parallel
// call) joins the tail. The tail therefore only grows, and still meets its
// budget.
//
// Split counts tokens as Compact does (see Options.MessageCounter). It is pure: msgs
// is not modified. Invalid options are treated as their defaults; use
// Options.Validate to reject them.
func Split(msgs []agentctx.Message, opts Options) Parts {
	o := opts.resolved()
	counts, _ := countEach(o.messageCounter(), msgs)
	h, t := split(msgs, counts, o.tailTokens())
	return parts(msgs, h, t)
}

func parts(msgs []agentctx.Message, h, t int) Parts {
	return Parts{Head: msgs[:h:h], Middle: msgs[h:t:t], Tail: msgs[t:len(msgs):len(msgs)]}
}

// split returns the end of the head and the start of the tail.
func split(msgs []agentctx.Message, counts []int, tailTokens int) (headEnd, tailStart int) {
	n := len(msgs)
	if n == 0 {
		return 0, 0
	}
	h := 0
	for h < n-1 && msgs[h].Role == agentctx.RoleSystem {
		h++
	}
	t, total := n, 0
	for t > h {
		t--
		total += counts[t]
		if total >= tailTokens {
			break
		}
	}
	return h, pairedCut(msgs, h, t)
}

// pairedCut moves the start of the tail back, not below h, while the tail
// would begin with a tool result whose call is in an earlier message.
func pairedCut(msgs []agentctx.Message, h, t int) int {
	if t <= h || !msgs[t].HoldsToolResult() {
		return t
	}
	calls := callsBefore{msgs: msgs, upTo: t}
	for t > h && answersEarlierCall(&msgs[t], t, &calls) {
		t--
	}
	return t
}

// callsBefore tells whether a tool call with an id is in a message before
// an index (below upTo). It looks in the message right before first,
// where a result's call almost always is, and maps every call below upTo
// only when that fails: a history of 50,000 calls is not mapped for each
// compaction (3.3 MB; issue 24, item 7).
type callsBefore struct {
	msgs []agentctx.Message
	upTo int
	at   map[string]int // id → the first message with a call of it
}

func (c *callsBefore) has(id string, i int) bool {
	if i > 0 && i <= c.upTo && c.msgs[i-1].HoldsToolCall(id) {
		return true
	}
	if c.at == nil {
		c.at = map[string]int{}
		for u := range agentctx.ToolUses(c.msgs[:c.upTo]) {
			if _, dup := c.at[u.ID]; !dup {
				c.at[u.ID] = u.Message
			}
		}
	}
	at, ok := c.at[id]
	return ok && at < i
}

// answersEarlierCall reports whether message i holds a tool result whose
// call is in a message before i.
func answersEarlierCall(m *agentctx.Message, i int, calls *callsBefore) bool {
	if m.Role == agentctx.RoleTool {
		return calls.has(m.ToolCallID, i)
	}
	for _, b := range m.Content.Blocks() {
		if b.Type != agentctx.BlockToolResult {
			continue
		}
		if calls.has(b.ToolUseID, i) {
			return true
		}
	}
	return false
}
