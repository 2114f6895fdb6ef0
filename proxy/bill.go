package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/tokens"
)

// Bill is money: what requests cost at list prices, and what they would
// have cost without agentctx (GET /agentctx/stats, per session and in
// "total"). Amounts are in USD.
type Bill struct {
	// CostUSD is the bill so far: the usage the upstream reported for
	// every answered request (and what the stream of a request its client
	// cancelled had reported, or the input counted when it had reported
	// nothing: see the package documentation, "Money"), priced at Options.Prices by the request's
	// model, summary requests included.
	CostUSD float64 `json:"cost_usd"`
	// CostWithoutUSD estimates the bill of the same requests sent as the
	// client sent them, and no summary requests (see the package
	// documentation, "Money").
	CostWithoutUSD float64 `json:"cost_without_usd"`
	// SavedUSD is CostWithoutUSD − CostUSD: negative when agentctx cost
	// more than it saved.
	SavedUSD float64 `json:"saved_usd"`
	// SummaryRequests counts the compaction summary requests the proxy
	// sent upstream itself (UpstreamSummarizers) and SummaryCostUSD is
	// their part of CostUSD.
	SummaryRequests int     `json:"summary_requests"`
	SummaryCostUSD  float64 `json:"summary_cost_usd"`
	// KeepWarmRequests counts the keep-warm requests the proxy sent
	// upstream itself (Options.KeepWarm) and KeepWarmCostUSD is their
	// part of CostUSD (nothing of CostWithoutUSD).
	KeepWarmRequests int     `json:"keep_warm_requests"`
	KeepWarmCostUSD  float64 `json:"keep_warm_cost_usd"`
	// The tokens billed, summary and keep-warm requests included:
	// uncached input, read from the prompt cache, written to it (either
	// lifetime), and output.
	InputTokens      int `json:"input_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	OutputTokens     int `json:"output_tokens"`
}

// add adds an exchange's money to b.
func (b *Bill) add(e *exchangeBill) {
	b.CostUSD += e.cost + e.summaryCost
	b.CostWithoutUSD += e.costWithout
	b.SummaryRequests += len(e.summaries)
	b.SummaryCostUSD += e.summaryCost
	if e.keepWarm {
		b.KeepWarmRequests++
		b.KeepWarmCostUSD += e.cost
	}
	u := e.usage
	for _, s := range e.summaries {
		u = u.Add(s.usage)
	}
	b.InputTokens += u.Uncached
	b.CacheReadTokens += u.CacheRead
	b.CacheWriteTokens += u.CacheWrite()
	b.OutputTokens += u.Output
}

// plus adds the money of o to b (SavedUSD is set by rounded).
func (b *Bill) plus(o Bill) {
	b.CostUSD += o.CostUSD
	b.CostWithoutUSD += o.CostWithoutUSD
	b.SummaryRequests += o.SummaryRequests
	b.SummaryCostUSD += o.SummaryCostUSD
	b.KeepWarmRequests += o.KeepWarmRequests
	b.KeepWarmCostUSD += o.KeepWarmCostUSD
	b.InputTokens += o.InputTokens
	b.CacheReadTokens += o.CacheReadTokens
	b.CacheWriteTokens += o.CacheWriteTokens
	b.OutputTokens += o.OutputTokens
}

// rounded returns b with its amounts rounded to a millionth of a dollar
// and SavedUSD set.
func (b Bill) rounded() Bill {
	b.SavedUSD = round6(b.CostWithoutUSD - b.CostUSD)
	b.CostUSD, b.CostWithoutUSD, b.SummaryCostUSD = round6(b.CostUSD), round6(b.CostWithoutUSD), round6(b.SummaryCostUSD)
	b.KeepWarmCostUSD = round6(b.KeepWarmCostUSD)
	return b
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// MessageCounter is implemented by an Engine that counts a message as it
// counts requests (PipelineEngine does). The proxy counts with it the
// messages of its estimate of the bill without agentctx that the Engine
// left uncounted in Request.Facts, so that they add up to
// Prepared.TokensBefore; without it, with the tokens package's default
// counter. CountMessage must be safe for concurrent use.
type MessageCounter interface {
	CountMessage(m agentctx.Message) int
}

// CountMessage implements MessageCounter with the pipelines' counter.
func (e *PipelineEngine) CountMessage(m agentctx.Message) int {
	return e.opts.Pipeline.MessageCounter.CountMessage(m)
}

// exchangeBill is one exchange's money: what the proxy keeps of the
// request to price it, and the figures.
type exchangeBill struct {
	model string
	// The request as the client sent it: its tools, system prompt (or
	// instructions), top-level cache_control and messages; nil when the
	// Engine did not see it.
	tools, system, auto []byte
	in                  *conversation
	sentBreaks          []int // breakpoints of each message sent, -1 unknown (edited requests)
	summarySink

	billed      bool
	keepWarm    bool // a keep-warm request's (keepwarm.go)
	usage       pricing.Usage
	cost        float64 // of the request itself
	costWithout float64
	summaryCost float64
}

// summarySink collects the usage of the summary requests made while the
// Engine prepared an exchange.
type summarySink struct {
	mu        sync.Mutex
	summaries []summaryCall
}

type summaryCall struct {
	api   API
	model string
	usage pricing.Usage
}

type summaryKey struct{}

// withSummaries returns ctx carrying the exchange's sink: the summary
// requests made under it (reportSummary) are billed to the exchange.
func withSummaries(ctx context.Context, x *exchange) context.Context {
	return context.WithValue(ctx, summaryKey{}, &x.bill.summarySink)
}

// reportSummary bills the answer of a summary request (data, a whole JSON
// answer in req's wire format) to the exchange whose context ctx is, if
// any.
func reportSummary(ctx context.Context, req *Request, data []byte) {
	sink, _ := ctx.Value(summaryKey{}).(*summarySink)
	if sink == nil {
		return
	}
	var sc usageScanner
	sc.whole(data, familyOf(req.API))
	if !sc.got {
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	sink.summaries = append(sink.summaries, summaryCall{api: req.API, model: req.Model, usage: sc.usage})
}

// providerOf returns the provider whose prompt cache serves an API
// (OpenAI's for one the proxy does not name).
func providerOf(api API) pricing.Provider {
	if f := familyOf(api); f != nil {
		return f.Info().Provider
	}
	return pricing.OpenAI
}

// pricesOf returns the prices of a model served over api: Options.Prices'
// entry, else pricing.Fallback of the API's provider; the cache rules are
// always the API's.
func (s *Server) pricesOf(api API, model string) pricing.Prices {
	p, ok := s.opts.Prices.Lookup(model)
	if !ok {
		p = pricing.Fallback(providerOf(api))
	}
	p.Provider = providerOf(api)
	return p
}

// counter returns what counts messages for the estimate without agentctx.
func (s *Server) counter() MessageCounter {
	if c, ok := s.opts.Engine.(MessageCounter); ok {
		return c
	}
	return s.defaultCounter()
}

// bill prices an exchange once it is done: its usage, the summary
// requests made for it, and the estimate of the request sent unedited. st
// is the exchange's session (nil without one).
func (s *Server) bill(st *sessionStats, x *exchange) {
	b := &x.bill
	b.mu.Lock()
	for _, c := range b.summaries {
		b.summaryCost += s.pricesOf(c.api, c.model).Cost(c.usage)
	}
	b.mu.Unlock()
	if est, ok := cancelledInput(st, x); ok {
		// A stream its client cancelled once the upstream answered, which
		// had reported nothing (OpenAI's report at their end): the
		// upstream bills its input all the same.
		p := s.pricesOf(x.api, b.model)
		b.billed, b.usage = true, est
		b.cost = p.Cost(b.usage)
		b.costWithout = b.cost
		return
	}
	if x.api == "" || !x.gotUsage || x.status >= 300 && !x.cancelled {
		// (A request its client cancelled is billed the usage its stream
		// had reported: the upstream bills it too.)
		return
	}
	p := s.pricesOf(x.api, b.model)
	b.billed, b.usage = true, x.usage
	b.cost = p.Cost(b.usage)
	b.costWithout = b.cost
	if st == nil || x.prepared == nil || b.in == nil {
		return // nothing edited, or nothing known to estimate with
	}
	if d, ok := st.billing.delta(s.counter(), p, x); ok {
		b.costWithout = max(0, b.cost+d)
	}
}

// cancelledInput estimates the input of a request its client cancelled
// after the upstream started answering (status 200) and before the
// answer reported any usage: the Engine's count of the request sent
// (Prepared.TokensAfter), read from the prompt cache up to the input the
// session's last answer reported (the prefix the provider cached then),
// the rest uncached. ok is false for any other request, and for one the
// Engine did not count.
func cancelledInput(st *sessionStats, x *exchange) (u pricing.Usage, ok bool) {
	if x.api == "" || !x.cancelled || !x.answering || x.gotUsage || x.prepared == nil || x.prepared.TokensAfter <= 0 {
		return u, false
	}
	n, cached := x.prepared.TokensAfter, 0
	if st != nil {
		st.mu.Lock()
		cached = min(st.LastUsage.Input(), n)
		st.mu.Unlock()
	}
	return pricing.Usage{Uncached: n - cached, CacheRead: cached}, true
}

// sessionBilling is what a session keeps to estimate its bill without
// agentctx: per model, the simulated prompt caches of the requests as sent
// and as the client sent them, and by msgHash the token count of each
// message the proxy counted itself (not one the Engine counted: see
// count).
type sessionBilling struct {
	mu     sync.Mutex
	caches map[string]*cachePair
	counts map[uint64]int
}

type cachePair struct{ sent, client *pricing.Cache }

// maxBillingModels bounds the models a session simulates caches for.
const maxBillingModels = 8

// delta returns, for an answered exchange with a prepared request, the
// simulated cost of the request as the client sent it minus that of the
// request as sent: both simulated with pricing.Cache at message
// granularity, on the same clock, with token counts scaled so that the
// request sent adds up to the input the upstream reported.
func (sb *sessionBilling) delta(mc MessageCounter, p pricing.Prices, x *exchange) (float64, bool) {
	b := &x.bill
	client := viewOf(b.in.doc.Messages, b.in.enc, b.in.hash, b.in.breaks)
	sent := client
	if x.edited {
		sent = viewOf(x.sentMsgs, x.sentEnc, x.sentHash, b.sentBreaks)
	}
	if len(client.msgs) == 0 || len(sent.msgs) == 0 {
		return 0, false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.counts == nil {
		sb.counts = map[uint64]int{}
		sb.caches = map[string]*cachePair{}
	}
	// The Engine's counts: of the request's messages in its facts, and so
	// of each message sent that is one of them.
	inFacts := b.in.facts
	if len(inFacts) != len(client.msgs) {
		inFacts = nil
	}
	engineCount := func(k int) int {
		if k < 0 || k >= len(inFacts) {
			return 0
		}
		return inFacts[k].Tokens
	}
	inTok, inSum := sb.count(mc, &client, engineCount)
	outTok, outSum := inTok, inSum
	if x.edited {
		outTok, outSum = sb.count(mc, &sent, func(j int) int {
			if j < len(x.sentMatch) && len(x.sentMatch) == len(sent.msgs) {
				return engineCount(x.sentMatch[j])
			}
			return 0
		})
	}
	if n := len(client.msgs) + len(sent.msgs); len(sb.counts) > 2*n+64 {
		// Forget the messages no longer sent.
		keep := make(map[uint64]int, n)
		for _, v := range []*cacheView{&client, &sent} {
			for _, h := range v.hash {
				if t, ok := sb.counts[h]; ok { // only what it holds: a message absent is not one of 0 tokens
					keep[h] = t
				}
			}
		}
		sb.counts = keep
	}
	// The system prompt and tools are what the Engine counted besides the
	// messages.
	head := max(x.prepared.TokensBefore-inSum, 0)
	ratio := 1.0
	if total := head + outSum; total > 0 {
		ratio = float64(x.bill.usage.Input()) / float64(total)
	}
	headBlocks := headOf(b.tools, b.system, head)
	pair := sb.caches[b.model]
	if pair == nil {
		if len(sb.caches) >= maxBillingModels {
			clear(sb.caches)
		}
		pair = &cachePair{sent: pricing.NewCache(p), client: pricing.NewCache(p)}
		sb.caches[b.model] = pair
	}
	out := x.bill.usage.Output
	clientBlocks := client.blocks(headBlocks, inTok, ratio, b.auto)
	sentBlocks := clientBlocks // an unedited request is its own blocks
	if x.edited {
		sentBlocks = sent.blocks(headBlocks, outTok, ratio, b.auto)
	}
	us := pair.sent.Bill(x.start, sentBlocks, out)
	uc := pair.client.Bill(x.start, clientBlocks, out)
	return p.Cost(uc) - p.Cost(us), true
}

// count returns the tokens of each message of v and their sum: the count
// the Engine made of it (engine(j), 0 when it made none: the Engine counts
// with mc), else the count of a message counted before, else counted now
// (and remembered: the session's memo holds only what the Engine did not
// count, such as the messages it changed).
func (sb *sessionBilling) count(mc MessageCounter, v *cacheView, engine func(j int) int) ([]int, int) {
	n := make([]int, len(v.msgs))
	sum := 0
	for j := range v.msgs {
		t := engine(j)
		if t <= 0 {
			h := v.hashAt(j)
			var ok bool
			if t, ok = sb.counts[h]; !ok {
				t = mc.CountMessage(v.msgs[j])
				sb.counts[h] = t
			}
		}
		n[j] = t
		sum += t
	}
	return n, sum
}

// cacheView is a list of messages as the prompt cache sees it: each
// message's prefix (by msgHash: cache_control does not change a prefix)
// and breakpoints. What it computes (an encoding, a hash) it writes into
// the exchange's slices it was made from, as the rest of the proxy does.
type cacheView struct {
	msgs   []agentctx.Message
	enc    [][]byte // nil entries: not kept
	hash   []uint64 // 0 entries: not computed
	breaks []int    // -1 entries: not counted
}

func viewOf(msgs []agentctx.Message, enc [][]byte, hash []uint64, breaks []int) cacheView {
	v := cacheView{msgs: msgs, enc: enc, hash: hash, breaks: breaks}
	if len(v.enc) != len(msgs) {
		v.enc = make([][]byte, len(msgs))
	}
	if len(v.hash) != len(msgs) {
		v.hash = make([]uint64, len(msgs))
	}
	if len(v.breaks) != len(msgs) {
		v.breaks = nil
	}
	return v
}

func (v *cacheView) encoding(j int) []byte {
	if v.enc[j] == nil {
		v.enc[j], _ = v.msgs[j].AppendJSON(nil)
	}
	return v.enc[j]
}

func (v *cacheView) hashAt(j int) uint64 {
	if v.hash[j] == 0 {
		v.hash[j] = msgHash(v.encoding(j))
	}
	return v.hash[j]
}

// breakpoint reports whether message j holds a cache_control breakpoint,
// and its lifetime (0: the provider's default).
func (v *cacheView) breakpoint(j int) (bool, time.Duration) {
	n := -1
	if v.breaks != nil {
		n = v.breaks[j]
	}
	if n < 0 {
		n = countBreakpoints(v.encoding(j))
	}
	if n == 0 {
		return false, 0
	}
	return true, ttlIn(v.encoding(j))
}

// ttlIn returns the longest cache_control lifetime written in raw: an hour
// when a breakpoint asks for "1h", else 0.
func ttlIn(raw []byte) time.Duration {
	if bytes.Contains(raw, []byte(`"ttl":"1h"`)) {
		return time.Hour
	}
	return 0
}

// headBlock is a block before the messages: the tools or the system prompt.
type headBlock struct {
	key    pricing.Key
	tokens int
	bp     bool
	ttl    time.Duration
}

// headOf returns the blocks of the tools and the system prompt (or
// instructions), in the order Anthropic reads them, sharing tokens between
// them by their bytes.
func headOf(tools, system []byte, tokens int) []headBlock {
	var out []headBlock
	var k pricing.Key
	total := len(tools) + len(system)
	left := tokens
	for i, raw := range [][]byte{tools, system} {
		if rawjson.Kind(raw) == 0 || rawjson.Kind(raw) == 'n' {
			continue
		}
		k = k.Extend(append([]byte{byte(i)}, raw...))
		n := left
		if i == 0 && len(system) > 0 {
			n = tokens * len(raw) / max(total, 1)
		}
		left -= n
		out = append(out, headBlock{key: k, tokens: n, bp: countBreakpoints(raw) > 0, ttl: ttlIn(raw)})
	}
	if len(out) == 0 && tokens > 0 {
		out = append(out, headBlock{tokens: tokens})
	}
	return out
}

// blocks returns the request's blocks: the head, then one block per
// message, tokens scaled by ratio; auto is a top-level cache_control,
// which marks the last block.
func (v *cacheView) blocks(head []headBlock, counts []int, ratio float64, auto []byte) []pricing.Block {
	out := make([]pricing.Block, 0, len(head)+len(v.msgs))
	scale := func(n int) int { return int(math.Round(float64(n) * ratio)) }
	var k pricing.Key
	for _, h := range head {
		k = h.key
		out = append(out, pricing.Block{Prefix: k, Tokens: scale(h.tokens), Breakpoint: h.bp, TTL: h.ttl})
	}
	var hb [8]byte
	for j := range v.msgs {
		binary.LittleEndian.PutUint64(hb[:], v.hashAt(j))
		k = k.Extend(hb[:])
		bp, ttl := v.breakpoint(j)
		out = append(out, pricing.Block{Prefix: k, Tokens: scale(counts[j]), Breakpoint: bp, TTL: ttl})
	}
	if rawjson.Kind(auto) == '{' && len(out) > 0 && !out[len(out)-1].Breakpoint {
		out[len(out)-1].Breakpoint, out[len(out)-1].TTL = true, ttlIn(auto)
	}
	return out
}

// defaultMessageCounter is the counter of a Server whose Engine counts no
// messages.
type defaultMessageCounter struct {
	once sync.Once
	mc   *tokens.MessageCounter
}

func (d *defaultMessageCounter) get() *tokens.MessageCounter {
	d.once.Do(func() { d.mc = tokens.NewMessageCounter(tokens.MessageOptions{Parallelism: -1}) })
	return d.mc
}

func (s *Server) defaultCounter() MessageCounter { return s.fallbackCounter.get() }
