package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pricing"
)

// A plan is the money model the priced policy (ClearPriced) decides by: a
// session grows by about the same number of tokens each request; each
// request reads from the provider's prompt cache what the request before
// it left there and writes the rest; a compaction is one summary request
// (reading the cached history, writing its instruction, paying for the
// summary's output) after which the history is what the compaction left
// and the cache holds only the system prompt and tools. Clearing stale
// results is a cache break too, without the summary.
//
// Every decision compares the cost of the session from this request to
// its next compaction under each choice, net of the steady cost of a
// request (the rate of the best cycle, rate): an edit that defers the next
// compaction is credited with the requests it defers at that rate, so it
// pays only when the reads it saves until then exceed the rewrite it
// causes. Its saving ends at the next compaction, which would have removed
// the same tokens (issue 45: a saving counted to the end of the session
// made a batch every few requests, each rewriting the cache). All counts
// are the provider's tokens; money is USD.
type plan struct {
	// read and write are the prices of a token read from the cache and
	// written to it (sent uncached where the provider bills no write);
	// output of a token generated.
	read, write, output float64
	// hit is the share of a cached prefix the provider serves from its
	// cache (usageState.Hit: 1 until measured); the rest is written again.
	hit float64
	// cold is the share of requests expected to find the cache cold (a
	// pause past its lifetime) and write their whole prefix again: the
	// session's own share so far (coldShare). A session that pauses pays
	// for the size of its history at every pause, which favours an
	// earlier compaction.
	cold float64
	// reserved is the tokens before the first message (system prompt,
	// tools): they stay cached through any edit of the messages.
	reserved int
	// growth is the tokens a request adds, as forwarded (its new
	// messages, with their large results as references).
	growth float64
	// after is the tokens of the request that follows a compaction (the
	// reserved tokens, the summary and the recent messages kept), and
	// summary the tokens a summary request generates.
	after, summary int
	// local reports a summarizer that writes offline (compact.Extractive):
	// a compaction then makes no summary request, and costs only the
	// request it shortens.
	local bool
	// instruction is the tokens a summary request adds to the history.
	instruction int
	// readBack is the expected cost of the turns that read back what a
	// removed result held, per result removed (see plan()).
	readBack float64
	// perRequest is the results each request adds that the next
	// compaction removes, priced at readBack.
	perRequest float64
	// horizon bounds the simulation of a decision: an edit's saving is
	// counted over at most that many requests when no compaction comes
	// first (Options.Horizon). A cycle is simulated to planHorizon.
	horizon int
}

// planPrices returns a plan's prices per token from pr (USD per million)
// for a cache of lifetime ttl: a write that asks for the hour
// (cache_control.ttl "1h") is priced at CacheWrite1h where pr has one.
// OpenAI bills no cache write, only the uncached input.
func planPrices(pr pricing.Prices, cached bool, ttl time.Duration) (read, write, input, output float64) {
	input, output = pr.Input/1e6, pr.Output/1e6
	read, write = pr.CacheRead/1e6, pr.CacheWrite/1e6
	if ttl >= time.Hour && pr.CacheWrite1h > 0 {
		write = pr.CacheWrite1h / 1e6
	}
	if pr.Provider == pricing.OpenAI || write <= 0 {
		write = input
	}
	if read <= 0 || !cached {
		// No cache (the provider reports none): every token is input.
		read, write = input, input
	}
	return read, write, input, output
}

// request returns the cost of a request of total tokens whose first
// cached tokens are read from the cache and the rest written to it.
func (pl *plan) request(cached, total int) float64 {
	c := float64(min(cached, total))
	if pl.hit > 0 {
		c *= pl.hit
	}
	// On a cold cache the cached tokens are written again too.
	c *= 1 - pl.cold
	return c*pl.read + (float64(total)-c)*pl.write
}

// coldPrior is the requests of a warm session that a measured share of
// cold requests is weighed against: a session's first pause is not yet a
// habit.
const coldPrior = 8

// coldShare returns the share of a session's requests expected to find
// the cache cold: the colds seen so far over the requests, shrunk towards
// none by coldPrior warm requests.
func coldShare(colds, requests int) float64 {
	if colds <= 0 {
		return 0
	}
	return float64(colds) / float64(requests+coldPrior)
}

// compaction returns the cost of a compaction of a request of t tokens
// whose first cached tokens are in the cache: its summary request, and
// the request itself sent compacted (the summary and what is kept after
// it written again), plus the read-back of what it removes.
func (pl *plan) compaction(cached, t int, removed float64) float64 {
	var summary float64
	if !pl.local {
		summary = pl.request(cached, t+pl.instruction) + float64(pl.summary)*pl.output
	}
	return summary + pl.request(pl.reserved, pl.after) + removed*pl.readBack
}

// outcome is a simulated course of the session from a request: its cost,
// the requests it spans and whether it ended with a compaction.
type outcome struct {
	cost      float64
	requests  int
	compacted bool
}

// run simulates the session from a request of t tokens whose first cached
// tokens are in the cache, growing by growth tokens a request, until the
// request that reaches trigger (compacted, included) or horizon requests.
func (pl *plan) run(t, cached, trigger, horizon int) outcome {
	var o outcome
	tf := float64(t)
	removed := 0.0
	for o.requests < horizon {
		o.requests++
		n := int(tf)
		if n >= trigger {
			o.cost += pl.compaction(cached, n, removed)
			o.compacted = true
			return o
		}
		o.cost += pl.request(cached, n)
		cached = n
		tf += pl.growth
		removed += pl.perRequest
	}
	return o
}

// weighing is how a plan weighed clearing stale results (see weigh).
type weighing struct {
	clear bool
	// horizon is the requests simulated without the clearing (to the
	// next compaction, included, or the plan's horizon); saving what the
	// clearing saves over them, net of the steady rate of the requests
	// it adds before the compaction, and cost the rewrite it causes and
	// the read-backs it is expected to cause. It clears when saving
	// exceeds cost.
	horizon      int
	saving, cost float64
}

// weigh weighs clearing n stale results that free freed tokens from a
// request of t tokens whose first cached tokens are in the cache; the
// clearing breaks the cache at breakAt (the request's tokens before the
// earliest edit: the reserved ones where only a breakpoint's lookback
// keeps a prefix, as Anthropic's). trigger and rate are the session's
// (trigger, cycle).
func (pl *plan) weigh(t, cached, freed, n, breakAt, trigger int, rate float64) weighing {
	at := min(cached, max(breakAt, pl.reserved))
	keep := pl.run(t, cached, trigger, pl.horizon)
	clear := pl.run(t-freed, at, trigger, pl.horizon)
	// The first request is the rewrite's: what it costs more than the
	// same request with the cache as it was.
	cost := pl.request(at, t-freed) - pl.request(cached, t-freed) + float64(n)*pl.readBack
	saving := score(keep, rate) - score(clear, rate) + cost - float64(n)*pl.readBack
	return weighing{clear: saving > cost, horizon: keep.requests, saving: saving, cost: cost}
}

// coldReset reports whether a request of t tokens, sent when the cache
// has gone cold, is cheaper compacted now than left to grow to trigger:
// the request writes its whole history again either way, and a summary
// request read uncached costs about that write, after which every request
// to the next compaction reads the smaller history (issue 45: the cold
// pauses of a session are its cheap resets). Both courses end at a
// compaction, so they compare net of the steady rate of the cycle: the
// cycle after a reset now is the steady one, worth its requests at rate.
// Below twice what a compaction leaves, nothing is reset.
func (pl *plan) coldReset(t, trigger int, rate float64) bool {
	if pl.local || pl.growth <= 0 || t < 2*pl.after || t >= trigger {
		return false
	}
	keep := pl.run(t, 0, trigger, planHorizon)
	reset := outcome{cost: pl.compaction(0, t, 0), requests: 1}
	return score(reset, rate) < score(keep, rate)
}

// batch returns the fewest tokens a batch of stale results must free, on
// a request where results go stale at inflow tokens a request and a
// clearing costs cost: each batch rewrites the cache once, whatever it
// frees, while a stale token left for a request costs a read. Clearing
// every k requests costs cost/k a request in rewrites and about
// read·inflow·k/2 in stale reads, least at k = √(2·cost/(read·inflow)),
// when a batch frees inflow·k tokens. A batch that the next one would
// supersede, a few requests later, is thus not made (issue 45).
func (pl *plan) batch(cost, inflow float64) int {
	if cost <= 0 || inflow <= 0 || pl.read <= 0 {
		return 0
	}
	return int(math.Sqrt(2 * cost / pl.read * inflow))
}

// cycle returns the cost per request of the steady cycle of a trigger:
// from the request after a compaction to the next compaction, included.
func (pl *plan) cycle(trigger int) float64 {
	o := pl.run(pl.after+int(pl.growth), pl.after, trigger, planHorizon)
	if o.requests == 0 {
		return math.Inf(1)
	}
	return o.cost / float64(o.requests)
}

// score returns the relative cost of an outcome: its cost net of the
// steady rate of its requests, so that outcomes spanning different
// numbers of requests compare.
func score(o outcome, rate float64) float64 { return o.cost - rate*float64(o.requests) }

// trigger returns the compaction trigger, within [lo, hi], whose steady
// cycle costs least per request, and that rate. Without growth (unknown,
// or none) it is hi.
func (pl *plan) trigger(lo, hi int) (int, float64) {
	if pl.growth <= 0 || hi <= lo {
		return hi, pl.cycle(hi)
	}
	best, rate := hi, pl.cycle(hi)
	// Steps of a hundredth of the range, at least the growth of a
	// request: the rate is flat near its minimum.
	step := max((hi-lo)/100, int(pl.growth), 1)
	for t := lo; t < hi; t += step {
		if r := pl.cycle(t); r < rate {
			best, rate = t, r
		}
	}
	return best, rate
}

// Trigger selects when a live session is compacted.
type Trigger string

// Triggers.
const (
	// TriggerPriced compacts at the size whose cycle costs least per
	// request (see plan): a compaction whose summary request reads the
	// cache is a cheap reset, and compacting earlier than the window
	// needs reads a smaller history on every request after it. It lies
	// between MinTriggerRatio of the window (or twice what a compaction
	// leaves, if more) and the threshold (Compact.Threshold), which stays
	// the latest point; before the session's growth is known (its first
	// requests), the threshold. The default under ClearPriced.
	TriggerPriced Trigger = "priced"
	// TriggerThreshold compacts at the threshold only (seed 002's rule;
	// the default under ClearBatched and for a Stateless Pipeline).
	TriggerThreshold Trigger = "threshold"
)

// ParseTrigger returns the trigger named s ("" is the default of the
// clearing policy, returned as "").
func ParseTrigger(s string) (Trigger, error) {
	switch Trigger(s) {
	case "", TriggerPriced, TriggerThreshold:
		return Trigger(s), nil
	}
	return "", fmt.Errorf("%w: unknown trigger %q (want priced or threshold)", ErrInvalidOption, s)
}

// PricedCeiling is the latest a priced trigger compacts, as a ratio of
// the window (below the threshold when that is lower). The plan's own
// optimum lies later than the measured one: replayed on recorded 120-step
// sessions of Claude Code and Codex (bench/cmd/hindsight), compacting by
// 0.42–0.5 of the window cost 12–25% less than where the plan put it
// (0.55–0.7); once the live proxy kept the priced tail (PricedTailRatio),
// 0.35 cost less again than 0.45 on every recorded session (Claude Code
// warm 0.7%, after cold pauses 4.7%, Codex 6.1%), and 0.3 or less cost
// more (a compaction every few requests).
const PricedCeiling = 0.35

// PricedTailRatio is the tail a compaction keeps under the priced trigger
// when Compact.TailRatio is zero, as a ratio of the window: half the
// seed's (compact.DefaultTailRatio). What the compaction leaves is
// written to the cache again, and read on every request until the next:
// the same replays cost 9–10% less with it, the model reading back what
// it needs by the summary's pointers. The offline summarizer keeps the
// seed's tail.
const PricedTailRatio = 0.05

// MinTriggerRatio is the earliest a priced trigger compacts, as a ratio
// of the window: a summary stands for the history's detail, and the
// model reads it back when it needs more; compacting a window's quarter
// at a time keeps what the model works on whole.
const MinTriggerRatio = 0.25

// DefaultSummaryTokens is what a plan expects a summary to take, output
// and input, before the session's first compaction says.
const DefaultSummaryTokens = 2_000

// readBackPrior is the share of removed results a plan expects the model
// to read back before the session has shown its own (ReadBacks of
// Removed, counted with it): one in twenty.
const (
	readBackPrior      = 0.05
	readBackPriorCount = 20
)

// limit returns the window compactions keep the session in.
func (c *call) limit() int {
	if l := c.p.opts.Compact.Limit; l > 0 {
		return l
	}
	return compact.DefaultLimit
}

// localSummarizer reports whether s writes summaries offline, with no
// model request: the default (nil) and compact.Extractive.
func localSummarizer(s compact.Summarizer) bool {
	switch s.(type) {
	case nil, compact.Extractive, *compact.Extractive:
		return true
	}
	return false
}

// planHorizon bounds a plan's simulations, in requests.
const planHorizon = 400

// priced reports whether the call decides its compaction by price.
func (c *call) priced() bool { return c.p.opts.pricedTrigger() }

// pricedTrigger reports whether the options compact at the priced
// trigger (see Trigger).
func (o *Options) pricedTrigger() bool {
	switch {
	case o.Stateless || o.Trigger == TriggerThreshold:
		return false
	case o.Trigger == TriggerPriced:
		return true
	}
	return o.Clearing == ClearPriced
}

// ratio returns the provider's tokens per counted token: fitted from the
// usage reported, else Options.EstimateRatio.
func (c *call) ratio() float64 {
	if u := c.st.Usage; u != nil && u.Ratio > 0 {
		return u.Ratio
	}
	if r := c.p.opts.EstimateRatio; r > 0 {
		return r
	}
	return 1
}

// plan returns the session's money model (see plan), in the provider's
// tokens, made once per call.
func (c *call) plan() *plan {
	if c.pl != nil {
		return c.pl
	}
	st, o := c.st, &c.p.opts
	ratio := c.ratio()
	pr := c.p.prices()
	// The provider caches unless its reports say it never does.
	cached := st.Usage == nil || st.Usage.N < 3 || st.Usage.Cached > 0
	pl := &plan{horizon: o.Horizon, instruction: 300, perRequest: 1}
	if pl.horizon <= 0 {
		pl.horizon = DefaultHorizon
	}
	pl.read, pl.write, _, pl.output = planPrices(pr, cached, c.ttl)
	pl.hit = st.Usage.hit()
	pl.cold = coldShare(st.Colds, st.Requests)
	pl.reserved = int(ratio * float64(c.reserved))
	pl.growth = ratio * st.ForwardedGrowth
	pl.local = localSummarizer(o.Compact.Summarizer)
	// A summary of a small window is small: the prior is at most a
	// twentieth of the window.
	pl.summary = min(DefaultSummaryTokens, max(c.limit()/20, 1))
	if st.SummaryTokens > 0 {
		pl.summary = int(ratio * float64(st.SummaryTokens))
	}
	if st.After > 0 {
		pl.after = int(ratio * float64(st.After))
	} else {
		pl.after = pl.reserved + pl.summary + int(ratio*float64(o.Compact.TailTokens()))
	}
	// What a read-back costs: a turn that reads the history (as its
	// cache holds it) and writes the result back into it.
	p := (float64(st.ReadBacks) + readBackPrior*readBackPriorCount) / (float64(st.Removed) + readBackPriorCount)
	est := c.st.estimate(c.tokens, o.EstimateRatio)
	pl.readBack = p * (float64(est)*pl.read + 2_000*pl.write + 200*pl.output)
	c.pl = pl
	return pl
}

// trigger returns the compaction trigger of the call, in the provider's
// estimated tokens: the threshold, or under the priced trigger the size
// whose cycle costs least (see TriggerPriced).
func (c *call) trigger() int {
	if c.trig > 0 {
		return c.trig
	}
	hi := c.threshold()
	c.trig = hi
	if !c.priced() || c.st.ForwardedGrowth <= 0 {
		return hi
	}
	pl := c.plan()
	if pl.local {
		// An offline summary keeps less of the history than a model's:
		// it is made when the window needs it, not when it is cheap.
		return hi
	}
	hi = min(hi, int(PricedCeiling*float64(c.limit())))
	c.trig = hi
	lo := max(int(MinTriggerRatio*float64(c.limit())), 2*pl.after)
	if lo >= hi {
		return hi
	}
	c.trig, c.rate = pl.trigger(lo, hi)
	return c.trig
}
