package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// Clearing selects when results a provider has already been sent, found
// stale, are cleared (replaced by prune's placeholder). Clearing one
// changes what earlier requests sent: the provider's prompt cache must be
// written again from the edit on, so when to clear is a question of money.
type Clearing string

// Clearing policies.
const (
	// ClearPriced clears when the clearing pays for itself (the default):
	// the tokens it frees, read from the cache by each request expected to
	// follow before the next compaction (at most Options.Horizon), must
	// cost more than writing the conversation's messages to the cache
	// again (an edit below the last few messages loses the cache of every
	// message: see priceClearing; with OpenAI's cache, the forwarded
	// messages after the earliest edit). When a compaction is expected
	// before Options.Horizon requests, the saving counts one request: the
	// compaction comes at the same size anyway and clearing only defers
	// it. When the cache has gone cold (no
	// request for longer than its lifetime) or a compaction is due,
	// clearing costs nothing more: every stale result is cleared then. In
	// practice stale output is cleared when the agent pauses and when the
	// window fills, in one batch each time.
	ClearPriced Clearing = "priced"
	// ClearBatched is the rule of earlier versions: stale results wait
	// until together they free Options.ClearAtLeast tokens and the
	// request reaches Options.ClearTrigger of the compaction trigger.
	ClearBatched Clearing = "batched"
)

// DefaultColdInlineLimit is the default of Options.ColdInlineLimit.
const DefaultColdInlineLimit = 8_000

// DefaultHorizon is the default of Options.Horizon.
const DefaultHorizon = 50

// ParseClearing returns the policy named s ("" is ClearPriced).
func ParseClearing(s string) (Clearing, error) {
	switch Clearing(s) {
	case "":
		return ClearPriced, nil
	case ClearPriced, ClearBatched:
		return Clearing(s), nil
	}
	return "", fmt.Errorf("%w: unknown clearing policy %q (want priced or batched)", ErrInvalidOption, s)
}

// ClearDecision is how the priced policy weighed a batch of stale results
// already sent (see ClearPriced). Money is in USD at Options.Prices.
type ClearDecision struct {
	// Candidates and CandidateTokens are the stale results already sent,
	// not cleared yet, and the tokens they would free.
	Candidates      int `json:"candidates"`
	CandidateTokens int `json:"candidate_tokens"`
	// Horizon is the number of requests the saving was counted over.
	Horizon int `json:"horizon"`
	// Cold reports a cache gone cold since the last request; Due a
	// compaction due on this request (the cache breaks anyway).
	Cold bool `json:"cold,omitempty"`
	Due  bool `json:"due,omitempty"`
	// Cleared and ClearedTokens are what was cleared; Saving the modeled
	// saving of that over the horizon, Cost the cache rewrite it causes
	// (of clearing every candidate when none was cleared; both 0 when cold
	// or due: nothing to weigh).
	Cleared       int     `json:"cleared"`
	ClearedTokens int     `json:"cleared_tokens"`
	Saving        float64 `json:"saving_usd"`
	Cost          float64 `json:"cost_usd"`
	// MinTokens is the fewest tokens a batch had to free to be made now
	// rather than with the results that go stale next (0: no such bound,
	// as when cold or due).
	MinTokens int `json:"min_tokens,omitempty"`
}

// Prices returns the prices the Pipeline weighs its edits with:
// Options.Prices when set, else pricing.Fallback(pricing.Anthropic).
func (p *Pipeline) Prices() pricing.Prices { return p.prices() }

// prices returns the prices edits are weighed with.
func (p *Pipeline) prices() pricing.Prices {
	if p.opts.Prices.Input > 0 {
		return p.opts.Prices
	}
	return pricing.Fallback(pricing.Anthropic)
}

// cacheTTL returns how long the provider keeps the cached prefix of the
// conversation msgs (the request as the client sent it): an hour when a
// breakpoint of its last messages asks for it (cache_control.ttl "1h"),
// else the provider's default lifetime.
func (c *call) cacheTTL(pr pricing.Prices, msgs []agentctx.Message) time.Duration {
	ttl := pr.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	for i := len(msgs) - 1; i >= 0 && i >= len(msgs)-4; i-- {
		for _, b := range msgs[i].Content.Blocks() {
			if cc, ok := b.Field("cache_control"); ok && bytes.Contains(cc, []byte(`"1h"`)) {
				return max(ttl, time.Hour)
			}
		}
	}
	return ttl
}

// priceClearing chooses whether to clear the pending stale results
// (already sent) now under ClearPriced: all of them or none. tokens is our
// count of the request as it will be forwarded (reserved tokens
// included); due reports that it reaches the compaction trigger.
//
// The choice is the plan's (plan.go): the session's cost from this
// request to its next compaction, net of the steady cost of the requests
// it spans, with the results cleared now (the cache written again from the
// edit on, fewer tokens read until the compaction, which comes later) and
// without (the compaction removes them then, or a cold cache lets them go
// for free). A saving is thus counted only until the compaction that
// would have removed the same tokens, and a clearing that merely defers a
// compaction pays only by the reads it saves before it. When a compaction
// is due, clearing instead of it is weighed the same way: it keeps the
// history whole, but the compaction's reset is often the cheaper rewrite.
// A cold cache (no request for longer than its lifetime) makes clearing
// free: every stale result is cleared then, unless a compaction is due.
func (c *call) priceClearing(pending []prune.Pruned, tokens int, due bool) ([]prune.Pruned, *ClearDecision) {
	d := &ClearDecision{Candidates: len(pending), Due: due}
	for _, p := range pending {
		d.CandidateTokens += p.FreedTokens
	}
	d.Cold = c.cold
	if d.Cold && !d.Due {
		d.Cleared, d.ClearedTokens = len(pending), d.CandidateTokens
		return pending, d
	}
	pl := c.plan()
	ratio := c.ratio()
	est := c.st.estimate(tokens, c.p.opts.EstimateRatio)
	// What this request finds in the cache: what the request before it
	// sent (its own new messages are written either way), or nothing
	// past the system prompt and tools when the cache is cold.
	cached := min(est, int(ratio*float64(c.st.Counted)))
	if c.cold {
		cached = pl.reserved
	}
	w := pl.weigh(est, cached, int(ratio*float64(d.CandidateTokens)), len(pending),
		est-int(ratio*float64(c.rewrittenTokens(c.p.prices().Provider, pending, tokens))), c.trigger(), c.cycleRate())
	d.Horizon, d.Saving, d.Cost = w.horizon, w.saving, w.cost
	if !d.Due && !c.cold {
		// Now, or with the results that go stale in the next requests?
		least := pl.batch(d.Cost, ratio*c.st.StaleGrowth)
		d.MinTokens = int(float64(least) / ratio)
		w.clear = w.clear && int(ratio*float64(d.CandidateTokens)) >= least
	}
	if !w.clear {
		return nil, d
	}
	d.Cleared, d.ClearedTokens = len(pending), d.CandidateTokens
	return pending, d
}

// coldReset reports whether a request of est estimated tokens under the
// trigger is compacted because the cache has gone cold and the plan finds
// the reset cheaper now (plan.coldReset). Only the priced trigger resets
// so, once the session's growth is known, and never from a request behind
// the session.
func (c *call) coldReset(est int) bool {
	if !c.cold || c.behind || !c.priced() || c.st.ForwardedGrowth <= 0 || len(c.view) == 0 {
		return false
	}
	return c.plan().coldReset(est, c.trigger(), c.cycleRate())
}

// cycleRate returns the cost per request of the session's steady cycle
// at its trigger (plan.cycle).
func (c *call) cycleRate() float64 {
	if c.rate == 0 {
		c.rate = c.plan().cycle(c.trigger())
	}
	return c.rate
}

// rewrittenTokens returns the tokens the provider writes again when the
// pending results are cleared from a request of tokens tokens (as
// forwarded, reserved tokens included): every message, or, on OpenAI, the
// messages after the earliest edit.
func (c *call) rewrittenTokens(provider pricing.Provider, pending []prune.Pruned, tokens int) int {
	total := tokens - c.reserved // the messages: system and tools stay cached
	if provider == pricing.OpenAI {
		// OpenAI caches every prefix of a request, with no breakpoints
		// and no lookback: an edit loses only what follows it. The
		// messages after the earliest edit, as forwarded: the client's
		// own counts hold its early results whole where the forwarded
		// request has their references (costsim, Codex: clearings that
		// rewrote 45,000 tokens were priced as 7,000).
		counts := c.countsOf(c.forwardedView())
		first := len(counts)
		for _, p := range pending {
			first = min(first, p.MessageIndex)
		}
		total = 0
		for _, n := range counts[first:] {
			total += n
		}
	}
	return total
}

// observeForwarded records the tokens the request's new messages add to
// what is sent (the messages past the last request's history, as
// forwarded: a large result as its reference), in the mean of
// ForwardedGrowth, of the last 20 requests or so. A history shorter than
// the last one (the client compacted, or a request of another turn) adds
// nothing.
func (c *call) observeForwarded() {
	st := c.st
	n := len(c.hist)
	if st.Length > 0 && n > st.Length && len(c.vf) == len(c.view) {
		g := 0
		for j := len(c.view) - 1; j >= c.live && c.histIndex(j) >= st.Length; j-- {
			g += c.vf[j].Tokens
		}
		st.Forwarded++
		recentMean(&st.ForwardedGrowth, st.Forwarded, float64(g))
	}
	st.Length = n
}

// observeStale records how many tokens of stale results already sent the
// request found (freed, before its decision) beyond those the last
// request left pending, in the mean of StaleGrowth, and what it leaves
// pending.
func (c *call) observeStale(freed, left int) {
	st := c.st
	if st.Requests > 0 {
		// Over as many requests as the forwarded growth, about.
		recentMean(&st.StaleGrowth, st.Forwarded+1, float64(max(freed-st.Stale, 0)))
	}
	st.Stale = left
}

// recentMean adds the nth sample x to *mean: the plain mean of the first
// 20 samples, then an exponentially weighted one over about the last 20.
func recentMean(mean *float64, n int, x float64) {
	*mean += max(1/float64(n), 0.05) * (x - *mean)
}

// forwardedTokens counts the request as it will be forwarded, so far: the
// view with the references of the results already offloaded, and the
// placeholders of those already cleared, in place (counted whole, the
// cleared results made every request after a first clearing look due for a
// compaction: costsim, Codex).
func (c *call) forwardedTokens() int {
	msgs, facts := c.forwardedView()
	return c.countFacts(msgs, facts) + c.reserved
}

// forwardedView returns the view as it will be forwarded, so far: the
// references of the results already offloaded and the placeholders of
// those already cleared in place, with the facts of its messages. Its
// messages are the view's, index for index.
func (c *call) forwardedView() ([]agentctx.Message, []agentctx.Facts) {
	var s StepReport
	view, vf, vsrc := c.view, c.vf, c.vsrc
	defer func() { c.view, c.vf, c.vsrc = view, vf, vsrc }()
	for _, action := range [...]string{actionPruned, actionOffloaded} {
		l := c.apply(c.replace(action, &s))
		c.view, c.vf, c.vsrc = l.msgs, l.facts, l.src
	}
	return c.view, c.vf
}

// coldSweep replaces by references, when the provider's cache has gone
// cold, the results kept whole of Options.ColdInlineLimit characters or
// more (measured as workspace.InlineChars) that are not among the most
// recent ones prune keeps: the next request writes the cache again anyway,
// so shrinking the history now costs nothing and saves on every later
// request. Reads of stored content back stay whole, and so does what the
// caller's thinking binding protects. It reports how many it replaced.
func (c *call) coldSweep(ctx context.Context) (int, error) {
	o := &c.p.opts
	limit := o.ColdInlineLimit
	if limit == 0 {
		limit = DefaultColdInlineLimit
	}
	if !c.cold || limit < 0 || o.Clearing != ClearPriced || c.p.ws == nil {
		return 0, nil
	}
	keep := o.Prune.KeepRecent
	if keep == 0 {
		keep = prune.DefaultKeepRecent
	}
	var rs []agentctx.ToolResult
	for r := range agentctx.ToolResults(c.view[c.live:]) {
		r.Message += c.live
		rs = append(rs, r)
	}
	n := 0
	for i, r := range rs {
		if i >= len(rs)-max(keep, 0) {
			break // the most recent results stay whole
		}
		st := c.results.state([2]int{r.Message, r.Block})
		if st == nil || st.Action != "" || st.Artifact == "" || c.bound(r.Message) || workspace.InlineChars(r.Content) < limit {
			continue
		}
		u := c.callOf(r.ID)
		if c.p.ws.ReadsBack(workspace.ToolCall{ID: r.ID, Name: u.Name, Input: u.Input, ReadsSaved: c.readsSaved(u.Input)}) {
			continue
		}
		sctx, cancel := c.p.storeCtx(ctx)
		ref, err := c.p.ws.Reference(sctx, st.Artifact)
		err = storeErr(ctx, sctx, err)
		cancel()
		if err != nil {
			return n, fmt.Errorf("pipeline: offload: %w", err)
		}
		st.Action, st.At, st.Content = actionOffloaded, c.now.UTC(), ref
		c.st.Removed++
		n++
	}
	if n > 0 {
		c.broke = true
	}
	return n, nil
}

// countsOf returns the token count of each message of list, whose facts
// are facts (see countFacts).
func (c *call) countsOf(list []agentctx.Message, facts []agentctx.Facts) []int {
	c.countFacts(list, facts)
	counts := make([]int, len(facts))
	for i := range facts {
		counts[i] = facts[i].Tokens
	}
	return counts
}
