// Package replay replays a recorded agent session through the pipeline the
// way the agent would have called it: Prepare once before each model
// request, with the history up to that request, and the usage the request
// recorded fed back afterwards. Run reports, request by request and in
// sum, what a provider's prompt cache could still serve, how far the token
// estimates were from the recorded usage, the time of each Prepare call,
// and the session's bill with and without the pipeline ("agentctx replay
// FILE", "agentctx report FILE").
//
// The package uses only the exported API of package pipeline.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// Options configure Run.
type Options struct {
	// Options are those of the Pipeline the session is replayed through.
	// Now is replaced by the time of each request (its assistant
	// message's timestamp); an empty WorkspaceDir with a nil Store means a
	// fresh workspace in a temporary directory, removed afterwards; an
	// empty SessionID means "replay".
	pipeline.Options
	// NoUsage replays without feeding the recorded usage back (the
	// estimates then rest on EstimateRatio alone).
	NoUsage bool
	// Prices price each request by the model its assistant message
	// records; nil means pricing.Default(). A request whose model the
	// table does not know is priced at Options.Prices when set, else at
	// pricing.Fallback(pricing.Anthropic).
	Prices pricing.Table
}

// ErrNoRequests is returned by Run for a transcript in which no model
// request can be found (no assistant message).
var ErrNoRequests = errors.New("no model request in the transcript")

// Result says how a session would have gone through the pipeline,
// request by request.
type Result struct {
	// Requests is the number of model requests replayed; Compactions the
	// compactions made; CacheBreaks the requests whose prepared messages
	// do not start with the previous request's prepared messages, byte for
	// byte.
	Requests    int `json:"requests"`
	Compactions int `json:"compactions"`
	CacheBreaks int `json:"cache_breaks"`
	// PrefixStableRatio is the mean, over requests after the first, of the
	// share of the previous request's prepared bytes that the request
	// starts with: what a provider's prompt cache can still serve.
	PrefixStableRatio float64 `json:"prefix_stable_ratio"`
	// CountError compares, for requests after the first that recorded a
	// usage, the estimate of the request (before its usage was known) with
	// the input tokens the provider reported.
	CountError CountError `json:"count_error"`
	// MaxMs and MedianMs are the time of one Prepare call.
	MaxMs    float64 `json:"max_ms"`
	MedianMs float64 `json:"median_ms"`
	// TokensBefore and TokensAfter sum, over the requests, our counts of
	// the request as the agent sent it and as prepared.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// CacheCost is the input the prepared requests would be billed, in
	// token-equivalents at Anthropic's prompt-cache prices: the part of a
	// request that starts like the previous one read from the cache (0.1×),
	// the rest written to it (1.25×), all of it when the previous request
	// is older than the cache's lifetime (5 minutes). It weighs what a
	// cache break costs against what clearing saves.
	CacheCost int `json:"cache_cost"`
	// Ratio is the provider's tokens per counted token fitted from the
	// recorded usage by the end of the session (0 without usage).
	Ratio float64 `json:"ratio"`
	// CostWithoutUSD is the session's bill as recorded, in USD at
	// Options.Prices: the usage recorded for each request (a direct
	// session's own bill), and for a request without one, the simulated
	// bill of the request as the agent sent it. CostUSD estimates the bill
	// of the prepared requests: each request's CostWithoutUSD plus the
	// difference between two simulated prompt caches (pricing.Cache), one
	// fed the prepared requests, one the requests as sent, at message
	// granularity (the system prompt and tools, then a block per message;
	// breakpoints on the system prompt, the last message, and, for the
	// prepared request, the last message it changed, where the proxy puts
	// one), counts scaled to the recorded usage. SavedUSD is CostWithoutUSD
	// − CostUSD. Summary requests are not counted.
	CostUSD        float64 `json:"cost_usd"`
	CostWithoutUSD float64 `json:"cost_without_usd"`
	SavedUSD       float64 `json:"saved_usd"`
	// PerRequest has one entry per request, in order.
	PerRequest []Request `json:"per_request"`
}

// CountError summarizes |estimate − usage| / usage, in percent.
type CountError struct {
	MedianPct float64 `json:"median_pct"` // median error, percent
	P95Pct    float64 `json:"p95_pct"`    // 95th percentile, percent
	N         int     `json:"n"`          // requests compared (0: no recorded usage)
}

// Request is one replayed request.
type Request struct {
	Request      int `json:"request"`       // 1-based
	Messages     int `json:"messages"`      // in the history given
	MessagesSent int `json:"messages_sent"` // in the prepared list
	Tokens       int `json:"tokens"`        // our count of the history given
	TokensSent   int `json:"tokens_sent"`   // our count of the prepared list
	// Estimate is the estimate of the request as the agent sent it, made
	// before its usage was known; Usage the input tokens recorded for it
	// (0 when none was), ErrorPct their difference in percent of Usage.
	Estimate int     `json:"estimate"`
	Usage    int     `json:"usage"`
	ErrorPct float64 `json:"error_pct"`
	// CacheBreak reports that the prepared list does not start with the
	// previous one; PrefixStable is the share of the previous list's bytes
	// it starts with.
	CacheBreak   bool    `json:"cache_break"`
	PrefixStable float64 `json:"prefix_stable"`
	Compacted    bool    `json:"compacted"` // this request compacted the history
	Pruned       int     `json:"pruned"`    // results newly pruned
	// PendingTokens is what the stale results waiting for a batch would
	// free (see Options.ClearAtLeast).
	PendingTokens int     `json:"pending_tokens"`
	Offloaded     int     `json:"offloaded"` // results newly replaced by a reference
	Ms            float64 `json:"ms"`        // the time of Prepare
	// CostUSD and CostWithoutUSD are the request's part of the
	// Result's.
	CostUSD        float64 `json:"cost_usd"`
	CostWithoutUSD float64 `json:"cost_without_usd"`
	// PreparedInputTokens, PreparedCacheReadTokens and
	// PreparedCacheWriteTokens split the input of the request as prepared
	// as the simulated prompt cache behind CostUSD bills it: uncached, read
	// from the cache, written to it (either lifetime); scaled to the
	// recorded usage.
	PreparedInputTokens      int `json:"prepared_input_tokens"`
	PreparedCacheReadTokens  int `json:"prepared_cache_read_tokens"`
	PreparedCacheWriteTokens int `json:"prepared_cache_write_tokens"`
}

// Run replays a recorded session the way an agent would have called
// Prepare: once before each model request, with the history up to that
// request, and, unless NoUsage, the usage recorded for the request fed back
// afterwards (Observe). A request is an assistant message of the document
// (for a Claude Code session, each new message.id); its usage is read from
// the message's "usage" member and its time from its timestamp.
func Run(ctx context.Context, doc *agentctx.Document, opts Options) (*Result, error) {
	o, cleanup, err := runOptions(opts.Options)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	r := &replayer{doc: doc, opts: opts}
	o.Now = func() time.Time { return r.clock }
	p, err := pipeline.New(o)
	if err != nil {
		return nil, err
	}
	defer p.Close()

	var requests []int
	for i, m := range doc.Messages {
		if m.Role == agentctx.RoleAssistant && i > 0 {
			requests = append(requests, i)
		}
	}
	if len(requests) == 0 {
		return nil, fmt.Errorf("%w: %w", agentctx.ErrInvalidInput, ErrNoRequests)
	}
	r.p = p
	r.money = newReplayBill(p, opts.Prices, p.RequestTokens(doc))
	r.res = &Result{PerRequest: make([]Request, 0, len(requests))}
	r.ttl = p.Prices().TTL
	for k, idx := range requests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.request(ctx, k, idx); err != nil {
			return nil, fmt.Errorf("request %d: %w", k+1, err)
		}
	}
	return r.result(len(requests)), nil
}

// runOptions returns the pipeline options of a replay: session "replay"
// unless set, and, when no workspace is given, a temporary one (with the
// offload and archive directories beside it) that cleanup removes.
func runOptions(o pipeline.Options) (_ pipeline.Options, cleanup func(), _ error) {
	if o.SessionID == "" {
		o.SessionID = "replay"
	}
	if o.WorkspaceDir != "" || o.Store != nil {
		return o, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "agentctx-replay-")
	if err != nil {
		return o, nil, err
	}
	o.WorkspaceDir = filepath.Join(dir, "workspace")
	if o.Files.Dir == "" {
		o.Files.Dir = filepath.Join(dir, "offload")
	}
	if o.Compact.Dir == "" {
		o.Compact.Dir = filepath.Join(dir, "offload")
	}
	return o, func() { os.RemoveAll(dir) }, nil
}

// replayer is the working state of Run: the pipeline, the replayed clock,
// the previous request (for the cache) and the samples the result's
// aggregates are made of.
type replayer struct {
	doc   *agentctx.Document
	opts  Options
	p     *pipeline.Pipeline
	money *replayBill
	res   *Result
	ttl   time.Duration

	clock      time.Time // what the pipeline's Now returns
	prev       []byte    // the previous prepared list, as JSON
	prevTokens int
	prevClock  time.Time
	lastTime   time.Time
	cost       float64
	errs       []float64
	stable     []float64
	times      []float64
}

// request replays the k-th request, the assistant message at idx: the
// clock set to its time, Prepare on the history before it, its prefix and
// bill compared with the previous request's, and its recorded usage fed
// back.
func (r *replayer) request(ctx context.Context, k, idx int) error {
	doc, p, res := r.doc, r.p, r.res
	asst := doc.Messages[idx]
	if ts, ok := asst.Timestamp(); ok {
		r.lastTime = ts
	} else if ts, ok := doc.Messages[idx-1].Timestamp(); ok && ts.After(r.lastTime) {
		r.lastTime = ts
	}
	r.clock = r.lastTime
	t0 := time.Now()
	out, err := p.PrepareCall(ctx, doc.WithMessages(doc.Messages[:idx]), pipeline.CallOptions{})
	if err != nil {
		return err
	}
	ms := float64(time.Since(t0).Microseconds()) / 1000
	r.times = append(r.times, ms)
	rep := &out.Report
	rr := Request{Request: k + 1, Messages: idx, MessagesSent: len(out.Messages), Tokens: rep.TokensBefore,
		TokensSent: rep.TokensAfter, Estimate: rep.EstimatedTokensBefore, Ms: ms}
	if s := rep.Step(pipeline.StepPrune); s != nil {
		rr.Pruned, rr.PendingTokens = s.New, s.PendingTokens
	}
	if s := rep.Step(pipeline.StepOffload); s != nil {
		rr.Offloaded = s.New
	}
	if s := rep.Step(pipeline.StepCompact); s != nil && s.Compact != nil && s.Compact.Compacted {
		rr.Compacted = true
		res.Compactions++
	}
	cur, err := agentctx.MarshalMessages(out.Messages)
	if err != nil {
		return err
	}
	r.cache(k, cur, &rr)
	var up pricing.Usage
	rr.CostUSD, rr.CostWithoutUSD, up = r.money.request(r.clock, asst, doc.Messages[:idx], out.Messages, rep.TokensBefore)
	rr.PreparedInputTokens, rr.PreparedCacheReadTokens, rr.PreparedCacheWriteTokens = up.Uncached, up.CacheRead, up.CacheWrite()
	res.CostUSD += rr.CostUSD
	res.CostWithoutUSD += rr.CostWithoutUSD
	if u, ok := recordedUsage(asst); ok {
		rr.Usage = u.Input()
		if k > 0 && rr.Usage > 0 {
			rr.ErrorPct = 100 * math.Abs(float64(rr.Estimate-rr.Usage)) / float64(rr.Usage)
			r.errs = append(r.errs, rr.ErrorPct)
		}
		if !r.opts.NoUsage {
			// The usage is of the request as the agent sent it.
			if err := p.Observe(ctx, u, rep.TokensBefore); err != nil {
				return err
			}
		}
	}
	if s := rep.Session; s != nil && s.Calibrated {
		res.Ratio = s.Ratio
	}
	res.TokensBefore += rr.Tokens
	res.TokensAfter += rr.TokensSent
	res.PerRequest = append(res.PerRequest, rr)
	return nil
}

// cache compares the k-th request's prepared list cur (as JSON) with the
// previous one: the prefix kept and whether the cache broke (in rr), and
// the relative cache cost, with every token written again when the cache
// expired in between.
func (r *replayer) cache(k int, cur []byte, rr *Request) {
	cached := 0
	cold := k > 0 && r.clock.Sub(r.prevClock) > r.ttl // the cache expired: every token written again
	r.prevClock = r.clock
	if k > 0 {
		rr.PrefixStable, rr.CacheBreak = prefixStability(r.prev, cur)
		r.stable = append(r.stable, rr.PrefixStable)
		if rr.CacheBreak {
			r.res.CacheBreaks++
		}
		cached = min(int(rr.PrefixStable*float64(r.prevTokens)), rr.TokensSent)
		if cold {
			cached = 0
		}
	}
	r.cost += 0.1*float64(cached) + 1.25*float64(rr.TokensSent-cached)
	r.prev, r.prevTokens = cur, rr.TokensSent
}

// result completes the result of n replayed requests with its aggregates.
func (r *replayer) result(n int) *Result {
	res := r.res
	res.Requests = n
	res.SavedUSD = round6(res.CostWithoutUSD - res.CostUSD)
	res.CostUSD, res.CostWithoutUSD = round6(res.CostUSD), round6(res.CostWithoutUSD)
	res.CacheCost = int(math.Round(r.cost))
	res.PrefixStableRatio = 1
	if len(r.stable) > 0 {
		res.PrefixStableRatio = mean(r.stable)
	}
	res.CountError = CountError{MedianPct: percentile(r.errs, 50), P95Pct: percentile(r.errs, 95), N: len(r.errs)}
	res.MedianMs, res.MaxMs = percentile(r.times, 50), slices.Max(r.times)
	return res
}

// prefixStability compares the JSON arrays of two prepared lists: the share
// of prev's messages (in bytes) that cur starts with, and whether cur does
// not start with all of them.
func prefixStability(prev, cur []byte) (float64, bool) {
	// Both are "[m1,m2,...]": prev's messages are a prefix of cur's when
	// cur starts with prev without its closing bracket, followed by "," or
	// "]".
	body := prev[:len(prev)-1]
	if bytes.HasPrefix(cur, body) && len(cur) > len(body) && (cur[len(body)] == ',' || cur[len(body)] == ']') {
		return 1, false
	}
	n := 0
	for n < len(body) && n < len(cur) && body[n] == cur[n] {
		n++
	}
	if len(body) <= 1 {
		return 1, n < len(body)
	}
	return float64(n) / float64(len(body)), true
}

// recordedUsage reads the "usage" member of a recorded assistant message
// (Anthropic's shape, its cache writes split by lifetime where
// cache_creation gives the split).
func recordedUsage(m agentctx.Message) (pricing.Usage, bool) {
	raw, ok := m.Field("usage")
	if !ok {
		return pricing.Usage{}, false
	}
	u, ok := wire.AnthropicUsage(raw)
	return u, ok && u.Input() > 0
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// percentile returns the p-th percentile of v (nearest rank), 0 for none.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// replayBill prices the requests of a replay (see Result.CostUSD):
// two simulated prompt caches per model, fed the requests as the agent
// sent them and as prepared.
type replayBill struct {
	p      *pipeline.Pipeline
	table  pricing.Table
	head   pricing.Block // the system prompt and tools
	caches map[string][2]*pricing.Cache
	// keys and counts of the agent's messages, which every request
	// repeats: computed once.
	keys   []pricing.Key
	counts []int
	own    map[pricing.Key]bool // the digest of each of the agent's messages
	ratio  float64              // provider tokens per counted token, last recorded
}

func newReplayBill(p *pipeline.Pipeline, table pricing.Table, extra int) *replayBill {
	if table == nil {
		table = pricing.Default()
	}
	var k pricing.Key
	head := pricing.Block{Prefix: k.Extend([]byte("system and tools")), Tokens: extra, Breakpoint: true}
	return &replayBill{p: p, table: table, head: head, caches: map[string][2]*pricing.Cache{}, own: map[pricing.Key]bool{}, ratio: 1}
}

// request returns the cost of one request as prepared and as the agent
// sent it (sent), made at now and answered by asst, and the prepared
// request's simulated usage.
func (rb *replayBill) request(now time.Time, asst agentctx.Message, sent, prepared []agentctx.Message, counted int) (with, without float64, up pricing.Usage) {
	model := ""
	if raw, ok := asst.Field("model"); ok {
		json.Unmarshal(raw, &model)
	}
	prices, ok := rb.table.Lookup(model)
	if !ok {
		prices = rb.p.Prices()
	}
	cs, ok := rb.caches[model]
	if !ok {
		cs = [2]*pricing.Cache{pricing.NewCache(prices), pricing.NewCache(prices)}
		rb.caches[model] = cs
	}
	// The agent's messages: keys chained from the system prompt, counted
	// once.
	for j := len(rb.keys); j < len(sent); j++ {
		k := rb.head.Prefix
		if j > 0 {
			k = rb.keys[j-1]
		}
		d := digest(sent[j])
		rb.own[d] = true
		rb.keys = append(rb.keys, k.Extend(d[:]))
		rb.counts = append(rb.counts, rb.p.MessageCounter().CountMessage(sent[j]))
	}
	recorded, hasUsage := recordedUsage(asst)
	if hasUsage && counted > 0 {
		rb.ratio = float64(recorded.Input()) / float64(counted)
	}
	scale := func(n int) int { return int(math.Round(float64(n) * rb.ratio)) }
	output := recorded.Output
	if !hasUsage {
		output = rb.p.MessageCounter().CountMessage(asst)
	}
	head := rb.head
	head.Tokens = scale(head.Tokens)
	client := []pricing.Block{head}
	for j := range sent {
		client = append(client, pricing.Block{Prefix: rb.keys[j], Tokens: scale(rb.counts[j]), Breakpoint: j == len(sent)-1})
	}
	prep := []pricing.Block{head}
	k, lastChanged := head.Prefix, -1
	for j, m := range prepared {
		d := digest(m)
		k = k.Extend(d[:])
		if !rb.own[d] && j < len(prepared)-1 {
			lastChanged = j // a message the pipeline wrote
		}
		n := 0
		if j < len(rb.keys) && k == rb.keys[j] {
			n = rb.counts[j]
		} else {
			n = rb.p.MessageCounter().CountMessage(m)
		}
		prep = append(prep, pricing.Block{Prefix: k, Tokens: scale(n), Breakpoint: j == len(prepared)-1})
	}
	if lastChanged >= 0 {
		prep[1+lastChanged].Breakpoint = true // the proxy's own breakpoint
	}
	uc := cs[0].Bill(now, client, output)
	up = cs[1].Bill(now, prep, output)
	without = prices.Cost(uc)
	if hasUsage {
		without = prices.Cost(recorded)
	}
	with = max(0, without+prices.Cost(up)-prices.Cost(uc))
	return with, without, up
}

// digest identifies a message by its content.
func digest(m agentctx.Message) pricing.Key {
	enc, _ := m.AppendJSON(nil)
	var k pricing.Key
	return k.Extend(enc)
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
