package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// prepare runs the session engine once: load the session's state, run the
// steps on the history with it, save it with compare-and-swap (running the
// steps again on the newer state when another writer saved first).
func (p *Pipeline) prepare(ctx context.Context, in agentctx.Conversation, extraReserved int, co CallOptions) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		res    *Result
		result error // an unpaired list to send: returned with the result
	)
	version, err := p.update(ctx, func(st *state) error {
		r, err := p.run(ctx, st, in, extraReserved, co)
		if err != nil && !errors.Is(err, agentctx.ErrUnpaired) {
			return err
		}
		res, result = r, err
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res.Report.Session != nil {
		res.Report.Session.Version = version
	}
	return res, result
}

// Observe feeds back the usage a provider reported for a request prepared
// by this Pipeline, counted is our count of it (see Observation.Counted;
// 0: the last one prepared), so that later reports estimate the
// provider's count from it: the next request is estimated as this usage
// plus the count of what changed, scaled by a ratio fitted per session.
// Observe does nothing for a Stateless Pipeline.
//
// The report is saved with compare-and-swap on the state this Pipeline
// saved last (its Prepare's), without loading it again: one store call
// when no other writer saved in between, else a load and a retry.
func (p *Pipeline) Observe(ctx context.Context, u pricing.Usage, counted int) error {
	if p.opts.Stateless {
		return nil
	}
	return p.observeState(ctx, u, counted) // one Save, no Load, in the usual case
}

// run is one pass of the steps over conv with the session state st, which
// it updates.
func (p *Pipeline) run(ctx context.Context, st *state, conv agentctx.Conversation, extraReserved int, co CallOptions) (*Result, error) {
	start := time.Now()
	in := conv.Messages
	c := p.newCall(st, len(in), extraReserved, co)
	cur := in[:len(in):len(in)]
	defer func() { p.rememberCounted(c.counts.result(), c.keyMemo.result(), c.classMemo.result()) }()
	inFacts, err := c.inputFacts(conv)
	if err != nil {
		return nil, err
	}
	c.in, c.inFacts = cur, inFacts
	// The cache's lifetime is the request's: its breakpoints say.
	c.ttl = c.cacheTTL(p.prices(), cur)
	c.cold = !st.LastAt.IsZero() && c.now.Sub(st.cacheUsed()) > c.ttl
	c.tokens = c.countFacts(cur, inFacts) + c.reserved
	c.rep.TokensBefore = c.tokens

	if err := c.steps(ctx); err != nil {
		return nil, err
	}
	c.endRequest()
	return c.result(ctx, start)
}

// newCall returns the working state of a run over n messages, with the
// token counts and result keys of the last run to reuse.
func (p *Pipeline) newCall(st *state, n, extraReserved int, co CallOptions) *call {
	o := &p.opts
	reserved := o.ReservedTokens + extraReserved
	c := &call{p: p, st: st, now: o.Now(), reserved: reserved, co: co}
	c.rep = &Report{
		MessagesBefore: n,
		ReservedTokens: reserved,
		Steps:          make([]StepReport, 0, 6),
		Warnings:       []string{},
	}
	counts, keys, classes := p.lastCounted()
	bound := 4*n + 1024 // a session's memos hold about its last request's
	// A message each is counted; about half are results, keyed and classified.
	c.counts, c.keyMemo, c.classMemo = carry(counts, bound, n), carry(keys, bound, n/2), carry(classes, bound, n/2)
	return c
}

// list is what one step hands the next: the messages and, index for
// index, their facts and the index of the input message each one is,
// unchanged, or -1 (a message a step made; see Result.Sources).
type list struct {
	msgs  []agentctx.Message
	facts []agentctx.Facts
	src   []int
}

// A step is one stage of a run. It is given the list as the steps before
// it left it, with the session's state and the run's working facts in the
// call, and returns the list it makes (the list it was given when it
// changes nothing; never modified in place) and its report. A step with a
// name is listed in the report: the loop counts the list it made and
// records the tokens it saved; an unnamed step does its own accounting
// (the session's compaction: the compact step reports what it saves).
type step struct {
	name Step
	run  func(c *call, ctx context.Context, in list) (list, StepReport, error)
}

// stepOrder is the order of the steps: repair the pairing, put the
// session's summary in place, store the new results, prune stale terminal
// output, offload large results, count, and compact when over the trigger.
var stepOrder = [...]step{
	{StepRepair, (*call).repair},
	{"", (*call).applyCompaction},
	{"", (*call).store},
	{StepPrune, (*call).prune},
	{StepOffload, (*call).offload},
	{StepCount, (*call).count},
	{StepCompact, (*call).compact},
}

// steps runs the steps in their order, one after the other: it checks the
// context before each, makes the list each one returns the view, and
// records the report of each named step.
func (c *call) steps(ctx context.Context) error {
	cur := list{msgs: c.in, facts: c.inFacts, src: identity(len(c.in))}
	for _, s := range stepOrder {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.view, c.vf, c.vsrc = cur.msgs, cur.facts, cur.src
		t0 := time.Now()
		next, rep, err := s.run(c, ctx, cur)
		if err != nil {
			return err
		}
		c.view, c.vf, c.vsrc = next.msgs, next.facts, next.src
		if s.name != "" {
			rep.Step = s.name
			c.finish(rep, t0)
		}
		cur = next
	}
	return nil
}

// endRequest records the request in the session state: its count, time
// and whether it changed the prefix, and (unless it is behind the session)
// the growth and the forgotten results.
func (c *call) endRequest() {
	st := c.st
	if !c.behind { // a request behind the session leaves the longer history's decisions and growth alone
		c.forget()
		c.observeForwarded()
	}
	st.Intact = st.Requests > 0 && !c.broke && !c.cold && !c.behind
	st.Requests++
	st.Counted = c.tokens
	st.LastAt, st.CacheAt = c.now.UTC(), time.Time{}
	if c.cold {
		st.Colds++
	}
	if c.broke {
		st.Breaks++
	}
}

// result validates the view and returns it with the run's report, which
// it completes; an unpaired view is returned with an error.
func (c *call) result(ctx context.Context, start time.Time) (*Result, error) {
	p, o, st := c.p, &c.p.opts, c.st
	rep := c.rep
	v := c.viewPairing()
	rep.Valid = v.Valid
	rep.Steps = append(rep.Steps, StepReport{Step: StepValidate, Pairing: &v, Tokens: c.tokens})
	rep.MessagesAfter = len(c.view)
	rep.TokensAfter = c.tokens
	rep.EstimatedTokensBefore = st.estimate(rep.TokensBefore, o.EstimateRatio)
	rep.EstimatedTokens = st.estimate(c.tokens, o.EstimateRatio)
	if !o.Stateless {
		rep.Session = &SessionReport{ID: p.sessionID, Namespace: p.namespace, Requests: st.Requests,
			Compactions: st.Compactions, CacheBreaks: st.Breaks, PrefixChanged: c.broke, Calibrated: st.Usage != nil, Ratio: o.EstimateRatio}
		if st.Usage != nil {
			rep.Session.Ratio = st.Usage.Ratio
		}
	}
	for i := range rep.Steps {
		rep.CharsSaved += rep.Steps[i].CharsSaved
		rep.TokensSaved += rep.Steps[i].TokensSaved
	}
	rep.Duration = time.Since(start)
	out := c.view
	if out == nil {
		out = []agentctx.Message{}
	}
	res := &Result{Messages: out, Report: *rep, Sources: c.vsrc, Facts: c.vf}
	if res.Sources == nil {
		res.Sources, res.Facts = []int{}, []agentctx.Facts{}
	}
	if !v.Valid {
		p.log.ErrorContext(ctx, "pipeline: the prepared list is unpaired", "issues", len(v.Issues), "first", v.Issues[0].String())
		return res, fmt.Errorf("pipeline: %w", v.Err())
	}
	p.log.DebugContext(ctx, "pipeline: prepared", "session", p.sessionID, "tokens_before", rep.TokensBefore, "tokens_after", rep.TokensAfter,
		"messages_before", rep.MessagesBefore, "messages_after", rep.MessagesAfter, "prefix_changed", c.broke, "duration", rep.Duration)
	return res, nil
}

// viewPairing returns the pairing report of the view: the repair step's
// of the input when the view is the input, message for message (Sources
// say so: the steps changed nothing), else the view's own.
func (c *call) viewPairing() agentctx.PairingReport {
	if c.inPairing != nil && len(c.view) == len(c.in) && len(c.vsrc) == len(c.view) {
		same := true
		for i, s := range c.vsrc {
			if s != i {
				same = false
				break
			}
		}
		if same {
			return *c.inPairing
		}
	}
	return agentctx.ValidatePairing(c.view)
}

// call is the working state of one run.
type call struct {
	p   *Pipeline
	st  *state
	now time.Time
	// cold reports that the provider's prompt cache has expired since the
	// session's last request: an edit costs nothing more now.
	cold bool
	// ttl is the lifetime of the request's cached prefix (cacheTTL): it
	// prices the plan's cache writes.
	ttl      time.Duration
	reserved int
	co       CallOptions
	rep      *Report
	tokens   int  // of the list as it stands, reserved tokens included
	over     bool // the count step found the estimate at or over the trigger

	in []agentctx.Message // the input
	// inPairing is the input's pairing report when the repair step found
	// it valid (nil otherwise): the report of a view that is the input.
	inPairing *agentctx.PairingReport
	hist      []agentctx.Message // the repaired input
	src       []agentctx.Message // hist with the summary in place: the originals of the view's results
	// srcFacts are src's (index for index; shared with the list the
	// applyCompaction step made).
	srcFacts []agentctx.Facts
	view     []agentctx.Message // what will be sent
	// The facts of the messages of in, hist and view (index for index):
	// every hash is known (inputFacts), and the token counts once counted
	// (countFacts). hsrc and vsrc give, for each message of hist and view,
	// the index of the input message it is, unchanged, or -1 (see
	// Result.Sources). A step that replaces messages makes new slices
	// (setView); facts of unchanged messages are shared and only filled in.
	inFacts, hf, vf []agentctx.Facts
	hsrc, vsrc      []int
	// The view is hist with hist[:base] after the head replaced by the
	// summary at view[head] (when compacted): view[live+k] is hist[base+k].
	head, live, base int
	compacted        bool
	fresh            bool // compacted by this call
	// behind is set when the history is the start of what the session's
	// compaction summarized: the call neither applies nor replaces it.
	behind bool
	// reusedTokens and reusedChars are what the session's summary saved
	// when it was put in place of the messages it stands for.
	reusedTokens, reusedChars int

	newArtifacts []newArtifact

	// results are the store step's: the resultKey and state of each tool
	// result of the view.
	results resultIndex
	seen    map[string]bool // the resultKeys of this call
	// unsent holds the results no earlier call has seen: replacing them
	// changes nothing a provider has cached. It is seen itself when the
	// state held no result (neither is changed after the store step).
	unsent map[string]bool
	// callsIn is the view of the store step, whose tool calls callOf
	// finds (in calls, made on first use: most requests store nothing).
	callsIn []agentctx.Message
	calls   map[string]agentctx.ToolUse
	broke   bool // this call changed what an earlier one sent
	// prunedHere holds the positions of the results the prune step
	// replaced in this call.
	prunedHere map[[2]int]bool

	// counts, keyMemo and classMemo are the Pipeline's memos as this
	// call sees and adds to them (countMemo): the token count of each
	// message by hash, the resultKey of each result by its message's hash
	// and block, and what prune.Classify said of each result by
	// resultKey.
	counts    carried[agentctx.Hash, int]
	keyMemo   carried[resultAt, string]
	classMemo carried[string, prune.Class]
	scratch   []byte // encodes a message to hash it

	// The priced policy's model (plan.go), made on first use: the plan,
	// the compaction trigger and its cycle's cost per request.
	pl   *plan
	trig int
	rate float64
}

// resultAt is a tool result by the content of its message (agentctx.Hash)
// and its block (-1: the message is a role "tool" message).
type resultAt struct {
	msg   agentctx.Hash
	block int
}

// resultKey returns the resultKey of r, a tool result of view message i:
// the one the last call or this one found for a result of a message of
// the same content at the same block, else computed.
func (c *call) resultKey(i int, r agentctx.ToolResult) string {
	var h agentctx.Hash
	if i < len(c.vf) {
		h = c.vf[i].Hash
	}
	if h.IsZero() {
		return c.p.digests.resultKey(r.ID, r.Content)
	}
	at := resultAt{h, r.Block}
	if k, ok := c.keyMemo.get(at); ok {
		return k
	}
	k := c.p.digests.resultKey(r.ID, r.Content)
	c.keyMemo.put(at, k)
	return k
}

// carried is one call's view of a memo a Pipeline carries from call to
// call: the last call's map (read only: calls share it) and, once this
// call adds to it, its own copy with the additions. A call that finds all
// it looks for adds nothing and hands the same map on; one that adds a
// few (a request's new messages) copies the map once, rather than writing
// every entry it used into a new one. When the last map has grown past
// the bound the call began with, the call keeps only what it uses (each
// entry it finds is copied into a map of its own), so that what a session
// no longer sends is forgotten.
type carried[K comparable, V any] struct {
	last  map[K]V
	own   map[K]V
	fresh bool // own keeps what this call uses, not all of last
	hint  int  // the entries own will hold, about, when last is empty
}

func carry[K comparable, V any](last map[K]V, bound, hint int) carried[K, V] {
	c := carried[K, V]{last: last, hint: hint}
	if len(last) > bound {
		c.fresh, c.own = true, make(map[K]V, bound/4)
	}
	return c
}

func (c *carried[K, V]) get(k K) (V, bool) {
	if c.own != nil {
		if v, ok := c.own[k]; ok {
			return v, true
		}
	}
	v, ok := c.last[k]
	if ok && c.fresh {
		c.own[k] = v
	}
	return v, ok
}

func (c *carried[K, V]) put(k K, v V) {
	if c.own == nil {
		c.own = maps.Clone(c.last)
		if c.own == nil {
			c.own = make(map[K]V, c.hint) // not grown step by step: a first request of 100,000 messages made 8 MB of garbage
		}
	}
	c.own[k] = v
}

// result is the map to carry to the next call: never modified after.
func (c *carried[K, V]) result() map[K]V {
	if c.own != nil {
		return c.own
	}
	return c.last
}

// countMemo holds the token count of every message the last call of a
// Pipeline counted (its input and what its steps made), and the resultKey
// of every tool result it keyed, by the hash of the message's encoding
// (agentctx.Hash), and what prune.Classify said of every result it
// pruned, by resultKey (a digest of its content): a session's next call
// counts, keys and classifies only the messages whose content is new,
// whoever made or decoded them. It keeps no message.
type countMemo struct {
	mu      sync.Mutex
	counts  map[agentctx.Hash]int
	keys    map[resultAt]string
	classes map[string]prune.Class
}

func (p *Pipeline) lastCounted() (map[agentctx.Hash]int, map[resultAt]string, map[string]prune.Class) {
	p.counted.mu.Lock()
	defer p.counted.mu.Unlock()
	return p.counted.counts, p.counted.keys, p.counted.classes
}

// rememberCounted keeps the counts, keys and classes of a call for the
// next one; the maps are not modified afterwards.
func (p *Pipeline) rememberCounted(counts map[agentctx.Hash]int, keys map[resultAt]string, classes map[string]prune.Class) {
	p.counted.mu.Lock()
	p.counted.counts, p.counted.keys, p.counted.classes = counts, keys, classes
	p.counted.mu.Unlock()
}

// classify returns prune.Classify of the result r of the view, from the
// last call's or this call's answer for a result of the same resultKey.
func (c *call) classify(r agentctx.ToolResult) prune.Class {
	key := c.results.key([2]int{r.Message, r.Block})
	if key == "" || r.Message < c.live {
		return prune.Classify(r.Content)
	}
	if cl, ok := c.classMemo.get(key); ok {
		return cl
	}
	cl := prune.Classify(r.Content)
	c.classMemo.put(key, cl)
	return cl
}

// inputFacts returns the facts of the input, in memory of the call's own
// (the caller's, filled in, under CallOptions.OwnFacts): those the caller
// gave (its token counts left out: the call counts with its own counter),
// and the hash of every message whose hash it did not give.
func (c *call) inputFacts(conv agentctx.Conversation) ([]agentctx.Facts, error) {
	facts := conv.Facts
	if !c.co.OwnFacts || len(facts) != len(conv.Messages) {
		facts = make([]agentctx.Facts, len(conv.Messages))
		copy(facts, conv.Facts)
	}
	for i := range facts {
		facts[i].Tokens = 0
		if err := c.hashFact(conv.Messages, facts, i, false); err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", agentctx.ErrInvalidInput, i, err)
		}
	}
	return facts, nil
}

// hashFact fills in the hash of message i when not known (from its
// encoding when known, else encoding it), keeping the encoding when keep
// is set and it was not kept.
func (c *call) hashFact(msgs []agentctx.Message, facts []agentctx.Facts, i int, keep bool) error {
	f := &facts[i]
	switch {
	case !f.Hash.IsZero():
	case f.Encoding != nil:
		f.Hash = agentctx.HashEncoding(f.Encoding)
	default:
		h, enc, err := agentctx.HashOf(msgs[i], c.scratch)
		if err != nil {
			return err
		}
		c.scratch, f.Hash = enc, h
		if keep {
			f.Encoding = append([]byte(nil), enc...)
		}
	}
	return nil
}

// countFacts returns the tokens of list, whose facts are facts (filled in
// with the counts): a message counted before keeps its count, one whose
// content the last call or this one counted gets that count, and the
// others are counted together.
func (c *call) countFacts(list []agentctx.Message, facts []agentctx.Facts) int {
	var miss []int
	missed := func(k int) {
		if miss == nil { // room for every message left: a first request misses them all
			miss = make([]int, 0, len(list)-k)
		}
		miss = append(miss, k)
	}
	n := 0
	for k := range list {
		f := &facts[k]
		if f.Tokens == 0 {
			if err := c.hashFact(list, facts, k, true); err != nil {
				missed(k) // counted, never remembered
				continue
			}
			if v, ok := c.counts.get(f.Hash); ok {
				f.Tokens = v
			} else {
				missed(k)
				continue
			}
		}
		n += f.Tokens
	}
	if len(miss) > 0 {
		msgs := list // every message missed (a session's first request): counted as they are
		if len(miss) < len(list) {
			msgs = make([]agentctx.Message, len(miss))
			for i, k := range miss {
				msgs[i] = list[k]
			}
		}
		each, _ := c.p.mc.CountEach(context.Background(), msgs) // never cancelled
		for i, k := range miss {
			f := &facts[k]
			f.Tokens = each[i]
			if !f.Hash.IsZero() {
				c.counts.put(f.Hash, each[i])
			}
			n += each[i]
		}
	}
	return n
}

// edit is a list a step made from the view: msgs, in which the messages
// at the indices changed (in ascending order) are new, the others the
// view's own.
type edit struct {
	msgs    []agentctx.Message
	changed []int
}

// factsOf returns the facts of e's messages: the view's, but none for the
// changed ones, and their sources.
func (c *call) factsOf(e edit) ([]agentctx.Facts, []int) {
	if len(e.changed) == 0 {
		return c.vf, c.vsrc
	}
	facts := append([]agentctx.Facts(nil), c.vf...)
	src := append([]int(nil), c.vsrc...)
	for _, k := range e.changed {
		facts[k], src[k] = agentctx.Facts{}, -1
	}
	return facts, src
}

// apply returns the list e makes of the view.
func (c *call) apply(e edit) list {
	facts, src := c.factsOf(e)
	return list{msgs: e.msgs, facts: facts, src: src}
}

// mapResults is agentctx.MapToolResults on the view, reporting the
// messages it replaced: the view itself when it replaced none.
func (c *call) mapResults(fn func(agentctx.ToolResult) (agentctx.Content, bool)) edit {
	msgs, changed := mapToolResults(c.view, fn)
	return edit{msgs: msgs, changed: changed}
}

// identity returns 0, 1, ..., n-1.
func identity(n int) []int {
	src := make([]int, n)
	for i := range src {
		src[i] = i
	}
	return src
}

// finish records a step's report with the tokens of the view after it:
// those it saved are added to s.TokensSaved.
func (c *call) finish(s StepReport, t0 time.Time) {
	if !s.Skipped {
		after := c.countFacts(c.view, c.vf) + c.reserved
		s.TokensSaved += c.tokens - after
		c.tokens = after
	}
	s.Tokens = c.tokens
	s.Duration = time.Since(t0)
	c.rep.Steps = append(c.rep.Steps, s)
}

// repair answers unanswered tool calls and drops orphan results of the
// input: the list it returns is the history (c.hist) the later steps work
// on.
func (c *call) repair(_ context.Context, in list) (list, StepReport, error) {
	c.hist, c.hf, c.hsrc = in.msgs, in.facts, in.src
	if c.p.opts.NoRepair {
		return in, StepReport{Skipped: true}, nil
	}
	if v := agentctx.ValidatePairing(in.msgs); v.Valid {
		// Nothing to repair: the history as it is (not a copy; no step
		// changes a list in place), validated once.
		c.inPairing = &v // the repair step is the first: in is the input
		return in, StepReport{Repairs: []agentctx.Repair{}}, nil
	}
	fixed, repairs := agentctx.RepairPairing(in.msgs)
	if v := agentctx.ValidatePairing(fixed); !v.Valid {
		is := v.Issues[0]
		return in, StepReport{}, fmt.Errorf("%w: the history cannot be repaired: message %d: %s (%d issue(s))",
			agentctx.ErrInvalidInput, is.Message, is.Kind, len(v.Issues))
	}
	s := StepReport{Changed: len(repairs), Repairs: repairs}
	if len(repairs) > 0 {
		s.CharsSaved = charsOf(in.msgs) - charsOf(fixed)
	}
	facts, src, err := c.matchInput(fixed)
	if err != nil {
		return in, StepReport{}, fmt.Errorf("%w: %w", agentctx.ErrInvalidInput, err)
	}
	c.hist, c.hf, c.hsrc = fixed, facts, src
	return list{msgs: fixed, facts: facts, src: src}, s, nil
}

// matchInput returns the facts of list, a list made from the input by
// dropping, adding and changing messages (repair), and the index of the
// input message each message is (the same encoding, in order), or -1.
func (c *call) matchInput(list []agentctx.Message) ([]agentctx.Facts, []int, error) {
	facts := make([]agentctx.Facts, len(list))
	src := make([]int, len(list))
	next := 0
	for j := range list {
		if err := c.hashFact(list, facts, j, false); err != nil {
			return nil, nil, err
		}
		src[j] = -1
		for k := next; k < len(c.in); k++ {
			if c.inFacts[k].Hash == facts[j].Hash {
				src[j], facts[j], next = k, c.inFacts[k], k+1
				break
			}
		}
	}
	return facts, src, nil
}

// applyCompaction puts the session's summary in place of the messages it
// stands for, when the history still starts with exactly those messages and
// goes on after them. A history that is only the start of them (a retry,
// a regenerate, a request sent alongside a longer one) is behind the
// session: it keeps its own messages, and the session keeps its
// compaction for the longer history (see behind.go).
//
// The list it returns, the history with the summary in place, is also the
// originals of the view's messages from now on (c.src). It saves tokens
// the compact step reports.
func (c *call) applyCompaction(_ context.Context, in list) (list, StepReport, error) {
	out := c.summarized(in)
	c.src, c.srcFacts = out.msgs, out.facts
	return out, StepReport{}, nil
}

// summarized returns the history with the session's summary in place of
// the messages it stands for, or the history itself (see applyCompaction).
func (c *call) summarized(in list) list {
	c.head, c.live, c.base = 0, 0, 0
	cs := c.st.Compaction
	if cs == nil {
		return in
	}
	if len(c.hist) <= cs.N && cs.Head < cs.N && (c.startOf(cs, c.hist, c.hf) || c.startOf(cs, c.in, c.inFacts)) {
		c.behind = true
		c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("the request holds %d of the %d messages the session's summary stands for (a retry, or a request older than the session's last): it is prepared from its own messages, and the summary is kept for the longer history", len(c.hist), cs.N))
		return in
	}
	if len(c.hist) <= cs.N || cs.Head >= cs.N || leadingSystem(c.hist[:cs.N]) < cs.Head {
		c.dropCompaction()
		return in
	}
	if d, ok := c.p.prefixDigest(c.hist[:cs.N], c.hf[:cs.N]); !ok || hexDigest(d) != cs.Digest {
		c.dropCompaction()
		return in
	}
	view := make([]agentctx.Message, 0, cs.Head+1+len(c.hist)-cs.N)
	view = append(view, c.hist[:cs.Head]...)
	view = append(view, summaryMessage(cs.Summary))
	view = append(view, c.hist[cs.N:]...)
	c.head, c.live, c.base, c.compacted = cs.Head, cs.Head+1, cs.N, true
	out := list{msgs: view}
	out.facts, out.src = spliceFacts(c.hf, c.hsrc, cs.Head, cs.N)
	after := c.countFacts(out.msgs, out.facts) + c.reserved
	c.reusedTokens, c.reusedChars = c.tokens-after, cs.Chars-charsOf(view[cs.Head:cs.Head+1])
	c.tokens = after
	return out
}

// spliceFacts returns the facts and sources of a list whose messages from
// head to end (excluded) are replaced by one new message (a summary).
func spliceFacts(facts []agentctx.Facts, src []int, head, end int) ([]agentctx.Facts, []int) {
	f := make([]agentctx.Facts, 0, head+1+len(facts)-end)
	f = append(append(append(f, facts[:head]...), agentctx.Facts{}), facts[end:]...)
	s := make([]int, 0, cap(f))
	s = append(append(append(s, src[:head]...), -1), src[end:]...)
	return f, s
}

func (c *call) dropCompaction() {
	c.st.Compaction = nil
	c.rep.Warnings = append(c.rep.Warnings, "the history no longer starts with the messages the session's summary stands for; the summary is dropped")
}

func summaryMessage(text string) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(text))
}

// bound reports whether the message at index i of the view is one the
// caller's thinking binding forbids the steps to change (CallOptions).
func (c *call) bound(i int) bool {
	return !c.co.EditBound && i >= c.live && c.histIndex(i) < c.co.Bound
}

// histIndex maps an index of the view after the summary to the history.
func (c *call) histIndex(i int) int {
	if !c.compacted {
		return i
	}
	return c.base + i - c.live
}

// store keeps every tool result of the live part of the view whole in the
// workspace, the first time a call sees it, and offloads the large ones
// (decision offloaded). Results seen before are not read or written again:
// the state says where they are. Under Options.StoreOnReplace the small
// ones are left to the step that replaces them (prune).
//
// It changes no message, and ends by telling whether the request is behind
// its session (checkBehind).
func (c *call) store(ctx context.Context, in list) (list, StepReport, error) {
	if err := c.storeResults(ctx); err != nil {
		return in, StepReport{}, err
	}
	c.checkBehind()
	return in, StepReport{}, nil
}

// storeResults is the store step's work on the view.
func (c *call) storeResults(ctx context.Context) error {
	n := len(c.view[c.live:]) / 2 // about the results of a list of tool turns: no map grows step by step
	c.results = makeResultIndex(len(c.view), n)
	c.seen = make(map[string]bool, n)
	// The new results' states are allocated together: all of them for a
	// session's first request, a few at a time after it (a warm request
	// adds one or two).
	var slab []resultState
	next := 16
	// A new result of a later request is a read of stored content back
	// when its call reads the workspace (counted for the plan); a
	// session's first request counts none: its results were not the
	// model's answer to anything this session removed.
	later := len(c.st.Results) > 0 && c.p.ws != nil && !c.behind
	if len(c.st.Results) == 0 {
		c.st.Results = make(map[string]*resultState, n) // the call's own: no state holds a result yet
		c.unsent = c.seen                               // every result is new: the same set
		next = max(n, next)
	} else {
		c.unsent = make(map[string]bool)
	}
	c.callsIn, c.calls = c.view, nil
	var failed error
	for r := range agentctx.ToolResults(c.view[c.live:]) {
		pos := [2]int{r.Message + c.live, r.Block}
		if r.ID == "" {
			return fmt.Errorf("%w: tool result %d of message %d has no tool call id", agentctx.ErrInvalidInput, max(r.Block, 0), pos[0])
		}
		key := c.resultKey(pos[0], r)
		c.seen[key] = true
		rs := c.st.Results[key]
		isNew := rs == nil
		if isNew {
			if len(slab) == cap(slab) {
				slab, next = make([]resultState, 0, next), 2*next
			}
			slab = append(slab, resultState{FirstSeen: c.now.UTC()})
			rs = &slab[len(slab)-1]
			c.st.Results[key] = rs
			c.unsent[key] = true
			if later {
				if u := c.callOf(r.ID); c.p.ws.ReadsBack(workspace.ToolCall{ID: r.ID, Name: u.Name, Input: u.Input}) {
					c.st.ReadBacks++ // the model read stored content back
				}
			}
		}
		c.results.add(pos, key, rs)
		var saved []string // the client's files the result names (noteSaved)
		if isNew {
			saved = workspace.SavedPaths(r.Content)
		}
		// A result that names a saved file is stored at once, however
		// small: a summary lists it (resultPointers).
		if rs.Artifact == "" && c.p.ws != nil && (!c.storedOnReplace(r.Content) || isNew && (len(saved) > 0 || c.namesStored(r.Content))) {
			if err := c.storeResult(ctx, rs, pos, r.ID, r.Content); err != nil {
				failed = err
				break
			}
		}
		c.noteSaved(saved) // after its own call was looked at: for the results after it
	}
	return storeFailure(failed)
}

// callOf returns the tool call of the store step's view with the id: the
// latest with it, which answers the results after it (the zero ToolUse
// when none).
func (c *call) callOf(id string) agentctx.ToolUse {
	if c.calls == nil {
		c.calls = make(map[string]agentctx.ToolUse, len(c.callsIn)/2+1)
		for u := range agentctx.ToolUses(c.callsIn) {
			c.calls[u.ID] = u
		}
	}
	return c.calls[id]
}

// storeFailure is the error of the store step for a failed store call.
func storeFailure(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspace.ErrInvalidID):
		return fmt.Errorf("%w: %w", agentctx.ErrInvalidInput, err)
	}
	return fmt.Errorf("pipeline: offload: %w", err)
}

// storeResult keeps the result at pos (tool call id, content) whole in the
// workspace, records its artifact in rs, and offloads it when it is large
// (decision offloaded).
func (c *call) storeResult(ctx context.Context, rs *resultState, pos [2]int, id string, content agentctx.Content) error {
	u := c.callOf(id)
	action := c.p.opts.Workspace.ActionName
	if action == nil {
		action = workspace.DefaultActionName
	}
	call := workspace.ToolCall{ID: id, Name: u.Name, Action: action(u), Input: u.Input, ReadsSaved: c.readsSaved(u.Input)}
	if pos[0] >= 0 && pos[0] < len(c.view) && content.IsText() && resultContent(c.view, pos[0], pos[1]).Text() == content.Text() {
		// A string whose decoding lost something is stored as sent.
		call.Sent, _ = agentctx.SentString(c.view[pos[0]], pos[1])
	}
	sctx, cancel := c.p.storeCtx(ctx)
	repl, off, err := c.p.ws.OffloadToolResult(sctx, call, content)
	err = storeErr(ctx, sctx, err)
	cancel()
	if err != nil {
		return err
	}
	if off.OverBudget {
		return nil // not stored (the workspace's byte budget): left as it is, tried again next request
	}
	rs.Artifact = off.ID
	if off.Indexed && rs.Action == "" && !c.bound(pos[0]) {
		c.st.Removed++
		rs.Action, rs.At, rs.Content = actionOffloaded, c.now.UTC(), repl.Text()
	}
	c.newArtifacts = append(c.newArtifacts, newArtifact{off: off, pos: pos, written: !off.Unchanged})
	return nil
}

// storedOnReplace reports whether a result with this content is left out
// of the store step under Options.StoreOnReplace: too small to be
// offloaded (by the inline limit, or the cold-cache limit), or to get a
// pointer in a summary (minPointerChars). Such a result is stored when a
// decision first replaces it (prune), and a compaction's archive holds it
// when a summary replaces it (so every result is stored when first seen
// when compactions are not archived).
func (c *call) storedOnReplace(content agentctx.Content) bool {
	o := &c.p.opts
	if !o.StoreOnReplace || (!o.NoCompact && o.Compact.NoArchive) {
		return false // without an archive, a compaction would lose what was never stored
	}
	limit := minPointerChars
	if l := o.Workspace.InlineLimit; l > 0 && l < limit {
		limit = l
	}
	if l := o.ColdInlineLimit; l > 0 && l < limit {
		limit = l
	}
	if content.IsText() && len(content.Text()) < limit {
		return true // bytes bound the characters
	}
	return workspace.InlineChars(content) < limit && content.Chars() < limit
}

// newArtifact is a result the store step saw for the first time.
type newArtifact struct {
	off     workspace.Offloaded
	pos     [2]int
	written bool
}

// prune replaces stale successful terminal output by the seed's
// placeholder, naming the artifact that keeps the original. Decisions are
// sticky: a result pruned once is pruned in every later call, with the same
// bytes. A result no earlier call has sent is pruned at once (that costs no
// cache); the others wait until the request nears the trigger (ClearTrigger)
// and together they free ClearAtLeast tokens, then are applied as one
// batch, so the provider's prompt cache breaks rarely, and only where
// clearing may spare a compaction.
func (c *call) prune(ctx context.Context, in list) (list, StepReport, error) {
	o := &c.p.opts
	if o.NoPrune {
		return in, StepReport{Skipped: true}, nil
	}
	po := o.Prune
	po.FirstSeen = func(r agentctx.ToolResult) (time.Time, bool) {
		if rs := c.results.state([2]int{r.Message, r.Block}); rs != nil && r.Message >= c.live {
			return rs.FirstSeen, true
		}
		return time.Time{}, false
	}
	if po.Classify == nil {
		po.Classify = c.classify
	}
	po.Logger = nil // the report says what was pruned
	// The decisions only (no copy of the view): the steps apply them.
	found := prune.Select(c.view, po)
	c.logTerminal(found)

	s := StepReport{}
	pending, now, freed := c.sortPruned(found.Pruned, po.Placeholder, &s)
	if clear := c.chooseClearing(pending, freed, &s); len(clear) > 0 {
		c.broke = true
		n := 0
		for _, pr := range clear {
			n += pr.FreedTokens
		}
		attrs := []any{"session", c.p.sessionID, "results", len(clear), "freed_tokens", n}
		if d := s.Clearing; d != nil {
			attrs = append(attrs, "cold", d.Cold, "due", d.Due, "saving_usd", d.Saving, "cost_usd", d.Cost)
		}
		c.p.log.Info("pipeline: pruned stale terminal output", attrs...)
		now = append(now, clear...)
		pending = pending[:len(pending)-len(clear)] // clear is a suffix of pending
	}
	s.Pending, s.PendingTokens = len(pending), 0
	for _, pr := range pending {
		s.PendingTokens += pr.FreedTokens
	}
	if !c.behind {
		c.observeStale(freed, s.PendingTokens)
	}
	if err := c.applyPruned(ctx, now, po.Placeholder, &s); err != nil {
		return in, StepReport{}, err
	}
	// A decision applies where prune finds the result stale in this very
	// request: a request behind the session (a retry, a request sent
	// alongside a longer one) keeps its own recent results whole, whatever
	// the longer history decided on them.
	c.prunedHere = make(map[[2]int]bool, len(s.Pruned))
	for _, pr := range s.Pruned {
		c.prunedHere[[2]int{pr.MessageIndex, pr.BlockIndex}] = true
	}
	next := c.replaceOnly(actionPruned, c.prunedHere, &s)
	s.Changed = len(s.Pruned)
	return c.apply(next), s, nil
}

// sortPruned sorts the stale results prune found by what becomes of them:
// those pruned in an earlier call go to s.Pruned again, those worth
// pruning that were never sent are pruned now, those already sent are
// pending (with the tokens they would free), and those before the open
// turn's thinking are deferred (counted in s). The summary, references and
// results whose placeholder is no smaller are left alone.
func (c *call) sortPruned(found []prune.Pruned, placeholder string, s *StepReport) (pending, now []prune.Pruned, freed int) {
	for _, pr := range found {
		key := c.results.key([2]int{pr.MessageIndex, pr.BlockIndex})
		rs := c.st.Results[key]
		switch {
		case rs == nil || rs.Action == actionOffloaded: // the summary, or already a reference
		case rs.Action == actionPruned:
			s.Pruned = append(s.Pruned, pr)
		default:
			// Worth it only when the placeholder, which names the
			// artifact, is smaller than the output.
			pr.FreedTokens = pr.Tokens - c.p.mc.CountText(c.placeholder(placeholder, c.artifactOf(rs, pr.ID)))
			switch {
			case pr.FreedTokens <= 0:
			case c.bound(pr.MessageIndex): // before the open turn's thinking: later
				s.Deferred++
			case c.unsent[key]: // never sent: pruning it costs no cache
				now = append(now, pr)
			default:
				pending = append(pending, pr)
				freed += pr.FreedTokens
			}
		}
	}
	return pending, now, freed
}

// chooseClearing returns the pending results (freeing freed tokens) to
// clear in this request, a suffix of pending: none, or all of them as the
// clearing policy decides (its decision in s.Clearing under ClearPriced).
func (c *call) chooseClearing(pending []prune.Pruned, freed int, s *StepReport) []prune.Pruned {
	o := &c.p.opts
	var clear []prune.Pruned
	var est, fwd int
	if len(pending) > 0 {
		// Size tests use the request as it will be forwarded: with the
		// references of the results already offloaded in place (the
		// offload step puts them there after this one), not the client's
		// whole results.
		fwd = c.forwardedTokens()
		est = c.st.estimate(fwd, o.EstimateRatio)
	}
	switch {
	case len(pending) == 0:
	case c.behind:
		// No new batch from a request behind the session: it would change
		// what the longer history sent without its next request knowing.
	case o.Stateless || o.ClearAtLeast < 0:
		clear = pending
	case o.Clearing == ClearBatched:
		if freed >= o.ClearAtLeast && est >= int(o.ClearTrigger*float64(c.threshold())) {
			clear = pending
		}
	default:
		clear, s.Clearing = c.priceClearing(pending, fwd, est >= c.trigger())
	}
	return clear
}

// applyPruned records the results pruned now in the session state, with
// their placeholder, storing first the originals StoreOnReplace left for
// now, and adds them to s.
func (c *call) applyPruned(ctx context.Context, now []prune.Pruned, placeholder string, s *StepReport) error {
	if len(now) == 0 {
		return nil
	}
	for _, pr := range now {
		pos := [2]int{pr.MessageIndex, pr.BlockIndex}
		rs := c.results.state(pos)
		if rs.Artifact == "" && c.p.ws != nil { // left for now by StoreOnReplace: stored before it leaves
			if err := c.storeResult(ctx, rs, pos, pr.ID, resultContent(c.view, pos[0], pos[1])); err != nil {
				return storeFailure(err)
			}
		}
		if rs.Action == "" {
			c.st.Removed++
		}
		rs.Action, rs.At, rs.Content = actionPruned, c.now.UTC(), c.placeholder(placeholder, rs.Artifact)
		s.Pruned = append(s.Pruned, pr)
	}
	s.New = len(now)
	return nil
}

// artifactOf returns the artifact that keeps a result's original: the
// one stored, or, for a result StoreOnReplace left for now, the id it will
// be stored under unless that id holds another result.
func (c *call) artifactOf(rs *resultState, id string) string {
	if rs.Artifact == "" && c.p.ws != nil && c.p.opts.StoreOnReplace {
		return workspace.ArtifactID(id)
	}
	return rs.Artifact
}

// threshold returns the compaction trigger in tokens.
func (c *call) threshold() int { return c.p.opts.Compact.ThresholdTokens() }

// placeholder is what a pruned result says: the seed's placeholder and,
// when the workspace keeps the original, its artifact id and how to read it
// back.
func (c *call) placeholder(ph, artifact string) string {
	if ph == "" {
		ph = prune.DefaultPlaceholder
	}
	if artifact == "" {
		return ph
	}
	return ph + "\n[Stored whole: " + workspace.ReadCall(artifact) + "]"
}

// replace puts the state's replacement content in place of every result of
// the view whose decision is action.
func (c *call) replace(action string, s *StepReport) edit {
	return c.replaceOnly(action, nil, s)
}

// replaceOnly is replace restricted to the results at the positions of
// only (all of them when only is nil).
func (c *call) replaceOnly(action string, only map[[2]int]bool, s *StepReport) edit {
	return c.mapResults(func(r agentctx.ToolResult) (agentctx.Content, bool) {
		if r.Message < c.live || only != nil && !only[[2]int{r.Message, r.Block}] {
			return agentctx.Content{}, false
		}
		rs := c.results.state([2]int{r.Message, r.Block})
		if rs == nil || rs.Action != action {
			return agentctx.Content{}, false
		}
		repl := agentctx.Text(rs.Content)
		if rs.Chars == 0 {
			rs.Chars = r.Content.Chars()
		}
		s.CharsSaved += rs.Chars - repl.Chars()
		return repl, true
	})
}

// offload puts the references of offloaded results in the view (mode
// workspace; in a client's summary request, the new results whole:
// keepSummaryWhole), or writes large results to files (mode files).
func (c *call) offload(ctx context.Context, in list) (list, StepReport, error) {
	o := &c.p.opts
	switch o.Offload {
	case OffloadNone:
		return in, StepReport{Skipped: true}, nil
	case OffloadFiles:
		return c.offloadToFiles(ctx, in)
	}
	s := StepReport{}
	if !c.behind { // a request behind the session makes no new decision on the longer history's results
		swept, err := c.sweep(ctx)
		if err != nil {
			return in, StepReport{}, err
		}
		s.New += swept
	}
	rep := c.offloadReport(&s)
	c.keepSummaryWhole(rep) // CallOptions.ClientSummary
	here := c.offloadedHere()
	next := c.replaceOnly(actionOffloaded, here, &s)
	for pos, e := range c.results.all {
		if rs := e.rs; rs.Action == actionOffloaded && (here == nil || here[pos]) {
			rep.Replaced++
			rep.ReplacedBytes += len(resultContent(c.src, pos[0], pos[1]).AsText())
		}
	}
	for _, a := range c.newArtifacts {
		if rs := c.results.state(a.pos); rs != nil && rs.Action == actionOffloaded {
			s.New++
		}
	}
	s.Changed = rep.Replaced
	if o.Verify {
		rep.Verified = c.verifyArtifacts(ctx)
	}
	return c.apply(next), s, nil
}

// offloadToFiles is offload in mode files: large results written to
// files, except those pruned in this request (their placeholder names
// their stored original).
func (c *call) offloadToFiles(ctx context.Context, in list) (list, StepReport, error) {
	pruned := func(r agentctx.ToolResult) bool {
		return r.Message >= c.live && c.prunedHere[[2]int{r.Message, r.Block}]
	}
	s, next, err := c.p.offloadFiles(ctx, in.msgs, pruned)
	if err != nil {
		return in, StepReport{}, err
	}
	e, err := c.diffView(next)
	if err != nil {
		return in, StepReport{}, fmt.Errorf("pipeline: offload: %w", err)
	}
	return c.apply(e), s, nil
}

// sweep runs the cold sweep (coldSweep) and marks the decisions it made
// on results that were whole: they depend on the request (behind.go). It
// returns how many results it offloaded.
func (c *call) sweep(ctx context.Context) (int, error) {
	var whole []*resultState
	if c.cold { // the sweep's decisions are marked: they depend on the request (behind.go)
		for _, e := range c.results.all {
			if rs := c.st.Results[e.key]; rs != nil && rs.Action == "" {
				whole = append(whole, rs)
			}
		}
	}
	swept, err := c.coldSweep(ctx)
	if err != nil {
		return 0, err
	}
	for _, rs := range whole {
		rs.Swept = rs.Action == actionOffloaded
	}
	return swept, nil
}

// offloadReport returns the report of offload in mode workspace with what
// the store step wrote (its artifacts and files in s) and how many
// results of the request the workspace keeps.
func (c *call) offloadReport(s *StepReport) *OffloadReport {
	rep := &OffloadReport{Mode: OffloadWorkspace, Workspace: c.p.wsRoot, Namespace: c.p.ws.Namespace()}
	s.Offload = rep
	pather, _ := c.p.opts.Store.(workspace.Pather)
	for _, a := range c.newArtifacts {
		if !a.written {
			continue
		}
		rep.Written++
		rep.StoredBytes += a.off.Bytes
		s.Artifacts = append(s.Artifacts, a.off.ID)
		if pather != nil {
			if path, err := pather.Path(rep.Namespace, a.off.ID); err == nil {
				s.Files = append(s.Files, path)
			}
		}
	}
	for _, e := range c.results.all {
		if rs := c.st.Results[e.key]; rs != nil && rs.Artifact != "" {
			rep.Stored++
		}
	}
	return rep
}

// verifyArtifacts reads back every artifact the store step wrote in this
// request and checks it against the original result (Options.Verify).
func (c *call) verifyArtifacts(ctx context.Context) *Verification {
	v := &Verification{}
	for _, a := range c.newArtifacts {
		orig := resultContent(c.src, a.pos[0], a.pos[1])
		got, err := c.p.ws.Get(ctx, a.off.ID)
		if err != nil {
			v.check(a.off.ID, false, err.Error())
			continue
		}
		back, err := workspace.OriginalContent(got)
		switch {
		case err != nil:
			v.check(a.off.ID, false, err.Error())
		default:
			v.check(a.off.ID, back.AsText() == orig.AsText(), fmt.Sprintf("read back %d bytes, want %d", len(back.AsText()), len(orig.AsText())))
		}
	}
	return v
}

// diffView returns the edit that makes next, a list as long as the view
// made by a step that does not say which messages it replaced, from the
// view: the messages whose encoding changed.
func (c *call) diffView(next []agentctx.Message) (edit, error) {
	e := edit{msgs: next}
	if len(next) != len(c.view) {
		return e, fmt.Errorf("a step made %d messages of %d", len(next), len(c.view))
	}
	for k := range next {
		h, enc, err := agentctx.HashOf(next[k], c.scratch)
		if err != nil {
			return e, err
		}
		c.scratch = enc
		if err := c.hashFact(c.view, c.vf, k, false); err != nil {
			return e, err
		}
		if h != c.vf[k].Hash {
			e.changed = append(e.changed, k)
		}
	}
	return e, nil
}

// count counts the request as it stands and sets c.over when its estimate
// reaches the trigger.
func (c *call) count(ctx context.Context, in list) (list, StepReport, error) {
	o := &c.p.opts
	est := c.st.estimate(c.tokens, o.EstimateRatio)
	check := compact.CheckResult{Tokens: est, ThresholdTokens: c.trigger()}
	check.ShouldCompact = len(c.view) > 0 && (est >= check.ThresholdTokens || c.coldReset(est))
	c.rep.ThresholdTokens = check.ThresholdTokens
	c.rep.Limit = o.Compact.Limit
	if c.rep.Limit <= 0 {
		c.rep.Limit = compact.DefaultLimit
	}
	c.over = check.ShouldCompact
	c.logPlan(ctx, est, check)
	return in, StepReport{Count: &check}, nil
}

// logPlan logs, at debug level, what the count step decided the
// compaction on: the session's state the plan read and the trigger.
func (c *call) logPlan(ctx context.Context, est int, check compact.CheckResult) {
	if !c.p.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	st := c.st
	attrs := []any{"session", c.p.sessionID, "requests", st.Requests, "now", c.now.UTC(), "last_at", st.LastAt, "cache_at", st.CacheAt,
		"cold", c.cold, "colds", st.Colds, "forwarded_growth", st.ForwardedGrowth, "forwarded", st.Forwarded, "length", st.Length,
		"after", st.After, "summary_tokens", st.SummaryTokens, "removed", st.Removed, "read_backs", st.ReadBacks,
		"crossed", st.Crossed, "tokens", c.tokens, "estimate", est, "trigger", check.ThresholdTokens, "compact", check.ShouldCompact}
	if u := st.Usage; u != nil {
		attrs = append(attrs, "usage_tokens", u.Tokens, "usage_counted", u.Counted, "ratio", u.Ratio, "usage_n", u.N, "hit", u.Hit, "hit_n", u.HitN)
	}
	if c.pl != nil {
		attrs = append(attrs, "plan_cold", c.pl.cold, "plan_growth", c.pl.growth, "plan_after", c.pl.after, "rate", c.rate)
	}
	c.p.log.DebugContext(ctx, "pipeline: plan", attrs...)
}

// remembered wraps a summarizer so that the same middle, summarized again
// by this Pipeline, gets the summary it got before without a new call: when
// a save loses its compare-and-swap, the call runs again on the newer state
// and, if it still compacts the same messages, must not pay for a second
// summary (with a model summarizer, a second paid call).
func (p *Pipeline) remembered(s compact.Summarizer) compact.Summarizer {
	if s == nil {
		s = compact.Extractive{}
	}
	if p.opts.Stateless {
		return s // every call independent
	}
	return compact.SummarizerFunc(func(ctx context.Context, req compact.Request) (string, error) {
		d, _, ok := prefixHashes(req.Messages, req.Facts, len(req.Messages))
		if !ok {
			return s.Summarize(ctx, req)
		}
		key := hexDigest(d) + "\x00" + req.Archive
		p.mu.Lock()
		sum, hit := p.summaries[key]
		p.mu.Unlock()
		if hit {
			return sum, nil
		}
		sum, err := s.Summarize(ctx, req)
		if err == nil && strings.TrimSpace(sum) != "" {
			p.mu.Lock()
			if len(p.summaries) >= maxRemembered {
				clear(p.summaries)
			}
			p.summaries[key] = sum
			p.mu.Unlock()
		}
		return sum, err
	})
}

// maxRemembered bounds the summaries a Pipeline remembers.
const maxRemembered = 8

// retryAfterFailure is the number of requests after which a compaction
// whose summary failed is tried again in the same crossing of the trigger.
//
// The rule for a failed compaction: it is tried again as soon as its cause
// may be gone, and at once when waiting would send a request the provider
// rejects.
//   - A failed archive (a full disk, a store down) costs nothing paid: the
//     next request over the trigger tries again.
//   - A failed summary (the model down, timing out) is not paid for on
//     every request: the requests over the trigger but within the limit
//     send the history uncompacted for retryAfterFailure requests, then try
//     again.
//   - A request over the limit (Options.Compact.Limit, in the provider's
//     estimated tokens) is always compacted if anything can be summarized,
//     whatever the failures and crossings before: sent as it is it would
//     be rejected, so trying costs nothing extra; when its summary fails
//     or times out, the extractive summary is written instead
//     (overLimitFallback).
const retryAfterFailure = 5

// compact summarizes the middle of the view when its estimate reaches the
// trigger, once per crossing of the trigger: a list that stays over it
// after a compaction (its recent messages alone are too large) is not
// compacted again until it has been below the trigger, unless it reaches
// the limit. A failed compaction is tried again as retryAfterFailure says.
// The summary is of the original messages, not of prune's placeholders or
// references; they are archived first, and what cannot be archived is not
// compacted. The summary ends with the pointers of the stored results it
// covers and of the archive (resultPointers, compact.Pointer). A request
// behind the session (c.behind) is compacted on its own messages, and its
// summary is not kept: the session's compaction is the longer history's.
func (c *call) compact(ctx context.Context, in list) (list, StepReport, error) {
	if !c.over && !c.behind {
		c.st.Crossed, c.st.RetryAt = 0, 0
	}
	cr := &CompactReport{}
	if c.compacted {
		cr.Reused, cr.ReusedArchive = c.base-c.head, c.st.Compaction.Archive
	}
	s := StepReport{Compact: cr}
	if !c.shouldCompact(c.over, &s) {
		return in, c.compactReport(s), nil
	}
	copts := c.compactOptions(ctx)
	fellBack := c.overLimitFallback(&copts)
	res, err := compact.Compact(ctx, in.msgs, copts)
	if err == nil && res.Compacted && *fellBack {
		c.rep.Warnings = append(c.rep.Warnings, "the summary failed; over the limit, the request is compacted with the extractive summary instead of sent uncompacted")
	}
	var aerr *compact.ArchiveError
	switch {
	case errors.As(err, &aerr):
		// Nothing was paid for: the next request over the trigger tries
		// again.
		c.rep.Warnings = append(c.rep.Warnings, "not compacted: the summarized messages could not be archived ("+aerr.Error()+"); tried again on the next request over the trigger")
		return in, c.compactReport(s), nil
	case err != nil:
		return in, StepReport{}, fmt.Errorf("pipeline: compact: %w", err)
	}
	c.noteCompactResult(cr, res)
	if !res.Compacted {
		return in, c.compactReport(s), nil
	}
	n, err := c.recordCompaction(res)
	if err != nil {
		return in, StepReport{}, err
	}
	c.reportCompaction(ctx, &s, cr, res, copts)
	// The new view: the summary, then the live part from the history.
	out := list{msgs: res.Messages}
	out.facts, out.src = spliceFacts(in.facts, in.src, res.Head, res.End)
	c.head, c.live, c.base, c.compacted, c.fresh = res.Head, res.Head+1, n, true, true
	return out, c.compactReport(s), nil
}

// overLimitFallback gives a request over the limit the extractive summary
// as its compaction's fallback (compact.Options.Fallback, on a deadline of
// its own) when its summarizer is another: sent uncompacted, such a
// request would be refused (issue 49.3). Within the limit a failed summary
// backs off instead (retryAfterFailure), and SummaryRequired keeps its
// failure. The bool it returns is set once the fallback wrote a summary.
func (c *call) overLimitFallback(copts *compact.Options) *bool {
	fell := new(bool)
	o := &c.p.opts.Compact
	if !c.overLimit() || o.SummaryRequired || copts.Fallback != nil || o.Summarizer == nil {
		return fell
	}
	if _, ok := o.Summarizer.(compact.Extractive); ok {
		return fell
	}
	copts.Fallback = compact.SummarizerFunc(func(ctx context.Context, r compact.Request) (string, error) {
		s, err := compact.Extractive{}.Summarize(ctx, r)
		*fell = err == nil
		return s, err
	})
	return fell
}

// generated returns the part of a summary its summarizer wrote: the
// summary without the pointers section the compaction appends to it
// (compact.WithPointers), which the plan must not price as output.
func generated(summary string) string {
	for _, title := range []string{compact.PointersTitle, compact.LatestResultsTitle} {
		if i := strings.Index(summary, "\n## "+title); i >= 0 {
			summary = summary[:i]
		}
	}
	return summary
}

// compactReport returns compact's step report: skipped only when no
// compaction is in the view, with what the reused compaction of earlier
// requests saves added to it (the loop adds what the step itself saved).
func (c *call) compactReport(s StepReport) StepReport {
	s.Skipped = s.Skipped && !c.compacted
	s.TokensSaved += c.reusedTokens
	s.CharsSaved += c.reusedChars
	s.Changed += s.Compact.Reused
	return s
}

// shouldCompact decides whether compact summarizes this request: it does
// when the list is over the trigger and neither the options, a crossing
// already compacted nor a recent failure hold it back (over the limit, or
// stateless, it always tries). When it does not, it notes why in the
// report and marks s skipped where compaction is off.
func (c *call) shouldCompact(over bool, s *StepReport) bool {
	o, st, rep := &c.p.opts, c.st, c.rep
	overLimit := c.overLimit()
	switch {
	case o.NoCompact:
		s.Skipped = true
		rep.BelowThreshold = !over
		if over {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s tokens reach the trigger of %s and compaction is off", textfmt.Thousands(c.tokens), textfmt.Thousands(rep.ThresholdTokens)))
		}
		return false
	case !over:
		rep.BelowThreshold = true
		return false
	case overLimit || o.Stateless:
		// Over the limit: try whatever happened before.
	case !c.behind && st.Crossed > 0 && c.tokens < st.Crossed+c.growthToCompactAgain():
		rep.BelowThreshold = false
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s tokens are still at or over the trigger of %s after this crossing was compacted; not compacting again until the list has been below it, has grown by %s tokens or reaches the limit", textfmt.Thousands(c.tokens), textfmt.Thousands(rep.ThresholdTokens), textfmt.Thousands(c.growthToCompactAgain())))
		return false
	case st.RetryAt > st.Requests:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the last summary failed; compaction is tried again in %d request(s), or at once when a request reaches the limit", st.RetryAt-st.Requests))
		return false
	}
	return true
}

// compactOptions returns the options compact.Compact runs with: the
// calibrated window, forced (the trigger was checked by shouldCompact),
// archiving required, the summarized range's originals and the pointers of
// the stored results it covers.
func (c *call) compactOptions(ctx context.Context) compact.Options {
	o := &c.p.opts
	copts := c.calibrated()
	copts.Force = true // the trigger is the estimate's, checked above
	// A tail after the summary would keep the open turn's thinking after
	// a changed prefix: the summary ends the request.
	copts.SummarizeAll = c.co.Bound > 0
	copts.SessionID = c.p.sessionID
	copts.ArchiveRequired = true // nothing is lost: what cannot be archived is not compacted
	if c.p.archiver != nil && o.Compact.Archiver == nil {
		copts.Archiver = c.p.archiver
	}
	copts.Summarizer = c.p.remembered(o.Compact.Summarizer)
	// The messages of the history the view's stand for (the summary and
	// the kept head are their own originals), before prune or offload
	// replaced anything in them: c.src's own, not copied (12 MB of a
	// compaction of 100,000 messages; issue 24, item 7).
	copts.Originals = func(view []agentctx.Message, h, t int) []agentctx.Message {
		return c.src[h:t:t]
	}
	copts.Facts = func(view []agentctx.Message, h, t int) []agentctx.Facts {
		if len(c.srcFacts) != len(c.src) || t > len(c.src) {
			return nil
		}
		return c.srcFacts[h:t:t]
	}
	if o.Compact.Pointers == nil {
		copts.Pointers = func(view []agentctx.Message, h, t int) []compact.Pointer {
			return c.resultPointers(ctx, view, h, t)
		}
	}
	return copts
}

// noteCompactResult copies compact.Compact's outcome into the report and
// the session state: a failed summary sets the retry, a list with nothing
// left to summarize marks the crossing, and every outcome short of a
// compaction below the trigger gets its warning.
func (c *call) noteCompactResult(cr *CompactReport, res *compact.Result) {
	st, rep := c.st, c.rep
	cr.Compacted, cr.Stats, cr.Reason, cr.Attempts = res.Compacted, res.Stats, res.Reason, res.Attempts
	cr.Archive = res.ArchiveID
	rep.BelowThreshold = res.BelowThreshold
	switch res.Reason {
	case "", compact.ReasonBelowThreshold, compact.ReasonEmpty:
	case compact.ReasonSummarizerFailed:
		st.RetryAt = st.Requests + retryAfterFailure
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the summary failed after %d attempt(s); the messages are sent uncompacted", res.Attempts))
	case compact.ReasonNothingToCompact:
		if !c.behind {
			st.Crossed = c.tokens
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s tokens reach the trigger of %s, but there is nothing left to summarize: the most recent messages alone are too large", textfmt.Thousands(c.tokens), textfmt.Thousands(rep.ThresholdTokens)))
	default:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("compacted to %s tokens, still at or over the trigger of %s (%s); not compacting again", textfmt.Thousands(res.Tokens), textfmt.Thousands(rep.ThresholdTokens), res.Reason))
	}
}

// recordCompaction records a compaction in the session state and returns
// how many messages of the history it covers. A request behind the
// session counts it but does not keep it: the session's compaction is the
// longer history's.
func (c *call) recordCompaction(res *compact.Result) (int, error) {
	st := c.st
	st.RetryAt = 0
	n := c.histIndex(res.End-1) + 1
	if !c.behind {
		// The crossing is handled unless the estimate of the compacted
		// list is below the trigger: then the next crossing is a new one.
		st.Crossed = 0
		if st.estimate(res.Tokens, c.p.opts.EstimateRatio) >= c.rep.ThresholdTokens {
			st.Crossed = res.Tokens
		}
		d, marks, ok := c.p.prefixDigestMarks(c.hist[:n], c.hf[:n], n-maxMarks)
		if !ok {
			return 0, fmt.Errorf("pipeline: compact: cannot hash the summarized history")
		}
		st.Compaction = &compactionState{Head: res.Head, N: n, Digest: hexDigest(d), Marks: marks, Summary: res.Summary, Archive: res.ArchiveID, At: c.now.UTC(),
			Chars: charsOf(c.hist[res.Head:n])}
	}
	if !c.behind {
		st.After, st.SummaryTokens = res.Tokens, c.p.mc.CountText(generated(res.Summary))
		for range agentctx.ToolResults(c.hist[c.base:n]) {
			st.Removed++ // summarized: read back from the archive or its artifact when needed
		}
	}
	st.Compactions++
	c.broke = true
	return n, nil
}

// reportCompaction fills the step report of a compaction (messages
// summarized, characters saved, the archive), verifies the archive when
// Options.Verify asks, and logs it.
func (c *call) reportCompaction(ctx context.Context, s *StepReport, cr *CompactReport, res *compact.Result, copts compact.Options) {
	s.Changed = res.Stats.CompactedMessageCount
	s.CharsSaved = charsOf(c.view[res.Head:res.End]) - charsOf(res.Messages[res.Head:res.Head+1])
	if res.Archive != "" {
		s.Files = []string{res.Archive}
	}
	cr.ArchivedBytes = res.ArchiveBytes
	if c.p.opts.Verify {
		v := &Verification{}
		ok, detail := c.verifyArchive(ctx, res, copts.Originals(c.view, res.Head, res.End))
		v.check(cr.Archive, ok, detail)
		cr.Verified = v
	}
	c.p.log.Info("pipeline: compacted", "session", c.p.sessionID, "summarized", res.Stats.CompactedMessageCount, "archive", res.ArchiveID)
}

// overLimit reports whether the request as it stands is estimated over
// the context window: sent as it is, the provider would reject it.
func (c *call) overLimit() bool {
	return c.st.estimate(c.tokens, c.p.opts.EstimateRatio) > c.rep.Limit
}

// calibrated returns the compact options with the window in our units:
// when the session has reported usage, the provider counts Ratio tokens per
// counted token plus what we never see (its own system prompt, tools), so
// the window and tail budget are divided by Ratio and the unseen part is
// reserved. Compact then cuts the tail and judges the result as the
// provider will.
func (c *call) calibrated() compact.Options {
	co := c.p.opts.Compact
	co.ReservedTokens += c.reserved
	u := c.st.Usage
	if u == nil || u.Ratio <= 0 {
		return co
	}
	limit := co.Limit
	if limit <= 0 {
		limit = compact.DefaultLimit
	}
	co.Limit = max(1, int(float64(limit)/u.Ratio))
	if unseen := float64(u.Tokens) - u.Ratio*float64(u.Counted); unseen > 0 {
		co.ReservedTokens += int(unseen / u.Ratio)
	}
	return co
}

// growthToCompactAgain is how many tokens a list still over the trigger
// after a compaction must grow by before it is compacted again: the tail
// budget (Limit × TailRatio), at least 1,000.
func (c *call) growthToCompactAgain() int {
	return max(c.p.opts.Compact.TailTokens(), 1_000)
}

// verifyArchive reads back the archive of a compaction and compares it
// with the summarized originals.
func (c *call) verifyArchive(ctx context.Context, res *compact.Result, want []agentctx.Message) (bool, string) {
	if res.Archive != "" && (c.p.ws == nil || res.ArchiveID == res.Archive) {
		return verifyArchive(res.Archive, want)
	}
	a, err := c.p.ws.Get(ctx, res.ArchiveID)
	if err != nil {
		return false, err.Error()
	}
	data, err := compact.EncodeArchive(want)
	if err != nil {
		return false, err.Error()
	}
	if a.Content != string(data) {
		return false, fmt.Sprintf("archive holds %d bytes, want %d", len(a.Content), len(data))
	}
	return true, ""
}

// forget drops the decisions on results that are no longer in the live
// part of the history (summarized, or gone from the conversation); their
// artifacts stay in the workspace.
func (c *call) forget() {
	keep := c.seen
	if c.fresh { // the live part moved: key the results it still has
		keep = make(map[string]bool)
		for r := range agentctx.ToolResults(c.hist[c.base:]) {
			keep[c.p.digests.resultKey(r.ID, r.Content)] = true
		}
	}
	for k := range c.st.Results {
		if !keep[k] {
			delete(c.st.Results, k)
		}
	}
}
