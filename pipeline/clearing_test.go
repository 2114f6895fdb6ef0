package pipeline_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// clearingSession runs a session whose first result (of bigChars
// characters, terminal output) goes stale while the conversation grows by
// tailChars per request (file reads), with gap between requests. It returns the prune
// step's report of each request.
func clearingSession(t *testing.T, bigChars, tailChars int, gap time.Duration, requests int, prices ...pricing.Prices) []*pipeline.StepReport {
	return clearingSessionLimit(t, 1_000_000, bigChars, tailChars, gap, requests, prices...) // no compaction
}

// clearingSessionLimit is clearingSession in a window of limit tokens.
func clearingSessionLimit(t *testing.T, limit, bigChars, tailChars int, gap time.Duration, requests int, prices ...pricing.Prices) []*pipeline.StepReport {
	t.Helper()
	o := options(t)
	o.Compact.Limit = limit
	if len(prices) > 0 {
		o.Prices = prices[0]
	}
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	out := func(n int) string { return `{"stdout":"` + strings.Repeat("ok ", n/3) + `","exitCode":0}` }
	hist := history(user("build", clock), exchange("toolu_big", "terminal-execute", "make", out(bigChars), false, clock))
	var reps []*pipeline.StepReport
	for i := range requests {
		clock = clock.Add(gap)
		// The conversation grows by file reads, which never go stale.
		hist = append(hist, exchange("toolu_"+string(rune('a'+i)), "Read", "main.go", strings.Repeat("code ", tailChars/5), false, clock)...)
		res := mustPrepare(t, p, hist)
		reps = append(reps, res.Report.Step(pipeline.StepPrune))
	}
	return reps
}

func clearedAt(reps []*pipeline.StepReport) []int {
	var at []int
	for i, r := range reps {
		if r.New > 0 {
			at = append(at, i)
		}
	}
	return at
}

// An edit whose cache rewrite costs more than what it saves is not made;
// one that pays is made once.
func TestPricedClearing(t *testing.T) {
	// A small stale result under a long tail: clearing it would rewrite
	// the whole tail to save little.
	reps := clearingSession(t, 3_000, 12_000, 3*time.Minute, 10)
	if at := clearedAt(reps); len(at) != 0 {
		t.Fatalf("cleared at requests %v: the rewrite costs more than it saves", at)
	}
	last := reps[len(reps)-1]
	if last.Pending == 0 || last.Clearing == nil || last.Clearing.Cleared != 0 || last.Clearing.Cost <= last.Clearing.Saving {
		t.Fatalf("want a pending result weighed and left: %+v %+v", last, last.Clearing)
	}
	// A large stale result under a short tail: clearing pays at once, and
	// once.
	reps = clearingSession(t, 36_000, 600, 3*time.Minute, 10) // under the inline limit: kept, then stale
	at := clearedAt(reps)
	if len(at) != 1 {
		t.Fatalf("cleared at requests %v, want once", at)
	}
	d := reps[at[0]].Clearing
	if d == nil || d.Cleared != 1 || d.Saving <= d.Cost {
		t.Fatalf("decision %+v", d)
	}
	for _, r := range reps[at[0]+1:] {
		if r.Changed != 1 || r.New != 0 {
			t.Fatalf("the clearing did not stick: %+v", r)
		}
	}
}

// After an idle gap longer than the cache's lifetime the cache is cold:
// clearing costs nothing more and is done at once.
func TestColdCacheClearing(t *testing.T) {
	reps := clearingSession(t, 3_000, 12_000, 6*time.Minute, 10)
	at := clearedAt(reps)
	if len(at) == 0 {
		t.Fatal("nothing cleared on a cold cache")
	}
	if d := reps[at[0]].Clearing; d == nil || !d.Cold {
		t.Fatalf("decision %+v, want cold", d)
	}
}

// The seed's batching stays available.
func TestBatchedClearingOption(t *testing.T) {
	if _, err := pipeline.New(pipeline.Options{Clearing: "sometimes"}); err == nil {
		t.Fatal("an unknown clearing policy was accepted")
	}
	o := options(t)
	o.Clearing = pipeline.ClearBatched
	p := newPipeline(t, o)
	if _, err := p.Prepare(t.Context(), []agentctx.Message{user("hi", now)}); err != nil {
		t.Fatal(err)
	}
}

// Size tests use the request as forwarded: after a compaction the client
// keeps sending its whole, growing history (it never learns of the
// summary), and the session must not take that for a request near its
// window (issue 22: batches fired on almost every step, far below the
// trigger).
func TestSizeTestsUseTheForwardedRequest(t *testing.T) {
	o := options(t)
	o.Compact.Limit = 20_000
	o.Compact.TailRatio = 0.2
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	hist := history(user("build", clock))
	compactions, overAfter := 0, 0
	for i := range 60 {
		clock = clock.Add(time.Minute)
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "Read", "f.go", strings.Repeat("code line\n", 120), false, clock)...)
		res := mustPrepare(t, p, hist)
		r := &res.Report
		cs := r.Step(pipeline.StepCompact)
		if cs.Compact.Compacted {
			compactions++
			continue
		}
		if compactions > 0 && r.TokensBefore > r.ThresholdTokens {
			overAfter++
			if c := r.Step(pipeline.StepCount).Count; c.ShouldCompact || c.Tokens >= c.ThresholdTokens {
				t.Fatalf("request %d: the client's %d tokens were taken for the forwarded %d", i, r.TokensBefore, r.TokensAfter)
			}
			if d := r.Step(pipeline.StepPrune).Clearing; d != nil && d.Due {
				t.Fatalf("request %d: a compaction was taken as due at %d forwarded tokens", i, r.TokensAfter)
			}
		}
	}
	if compactions == 0 || overAfter == 0 {
		t.Fatalf("%d compactions, %d requests over the trigger as sent after one: the test needs both", compactions, overAfter)
	}
}

// A compaction is due only when the request as it will be forwarded (with
// offloaded results as references) reaches the trigger, not the client's
// whole request (issue 22: the client's 192,000 tokens, 115,000 forwarded,
// made every newly stale result a "free" clearing on a warm cache, each
// rewriting the cache).
func TestDueCompactionUsesTheForwardedSize(t *testing.T) {
	o := options(t)
	o.Compact.Limit = 40_000 // trigger 36,800
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	out := func(n int) string { return `{"stdout":"` + strings.Repeat("ok ", n/3) + `","exitCode":0}` }
	hist := history(user("build", clock), exchange("toolu_small", "terminal-execute", "make", out(3000), false, clock))
	var last *pipeline.Report
	weighed := 0
	for i := range 12 {
		clock = clock.Add(2 * time.Minute) // a warm cache
		// Large file reads: offloaded at once, so the client's request
		// grows far past the trigger while the forwarded one stays small.
		hist = append(hist, exchange(fmt.Sprint("toolu_read", i), "Read", "big.go", strings.Repeat("a line of code\n", 3_000), false, clock)...)
		res := mustPrepare(t, p, hist)
		last = &res.Report
		r := res.Report.Step(pipeline.StepPrune)
		if r.Clearing != nil && r.Clearing.Candidates > 0 {
			weighed++
		}
		if r.Clearing != nil && r.Clearing.Due {
			t.Fatalf("request %d: a compaction taken as due (%+v): the client sent %d tokens, %d forwarded", i, r.Clearing, res.Report.TokensBefore, res.Report.TokensAfter)
		}
	}
	if last.TokensBefore < last.ThresholdTokens || last.TokensAfter >= last.ThresholdTokens {
		t.Fatalf("the test needs a client request over the trigger (%d) and a forwarded one under it (%d), trigger %d", last.TokensBefore, last.TokensAfter, last.ThresholdTokens)
	}
	if weighed == 0 {
		t.Fatal("no stale result was ever weighed: the test needs one")
	}
}

// When the cache has gone cold, results kept whole of ColdInlineLimit
// characters or more (not the most recent, not reads of stored content)
// are replaced by references: the rewrite happens anyway, the saving
// lasts. A warm cache never sees it.
func TestColdCacheSweep(t *testing.T) {
	o := options(t)
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	file := strings.Repeat("a line of the file\n", 600) // 11,400 characters: kept whole
	hist := history(user("read it", clock), exchange("toolu_old", "Read", "a.go", file, false, clock))
	hist = append(hist, exchange("toolu_back", "get_knowledge_by_id", "x", file+"page", false, clock)...)
	for i := range 6 {
		clock = clock.Add(time.Minute)
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "Read", "b.go", file+fmt.Sprint(i), false, clock)...)
		res := mustPrepare(t, p, hist)
		if got := resultText(res.Messages, "toolu_old"); got != file {
			t.Fatalf("request %d, warm: the result was replaced", i)
		}
	}
	clock = clock.Add(20 * time.Minute) // the cache expired
	res := mustPrepare(t, p, hist)
	if got := resultText(res.Messages, "toolu_old"); !strings.HasPrefix(got, "<knowledge_list>") || !strings.Contains(got, "tool_result_toolu_old") {
		t.Fatalf("cold: the old result was not replaced by its reference: %.80q", got)
	}
	if got := resultText(res.Messages, "toolu_back"); got != file+"page" {
		t.Fatal("cold: a read of stored content back was replaced")
	}
	if got := resultText(res.Messages, "toolu_5"); got != file+"5" {
		t.Fatal("cold: a recent result was replaced")
	}
	if !res.Report.Session.PrefixChanged {
		t.Fatal("the sweep did not report the changed prefix")
	}
	// Sticky: the next, warm request sends the same reference.
	clock = clock.Add(time.Minute)
	again := mustPrepare(t, p, hist)
	if resultText(again.Messages, "toolu_old") != resultText(res.Messages, "toolu_old") || again.Report.Session.PrefixChanged {
		t.Fatal("the sweep's decision did not stick")
	}
}

// OpenAI caches every prefix, with no breakpoints and no lookback: an edit
// costs only the messages after it, so a stale result under a short tail
// is cleared there on a warm cache, while with Anthropic's cache (an edit
// below the last messages loses them all) a mid-history one is not.
func TestPricedClearingByProvider(t *testing.T) {
	gpt, _ := pricing.Default().Lookup("gpt-5")
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	// A stale 3,000-character result followed by 12,000 characters a
	// request: early in the history, under a long tail.
	for _, c := range []struct {
		name   string
		prices pricing.Prices
		want   bool
	}{{"anthropic", sonnet, false}, {"openai", gpt, false}} {
		reps := clearingSession(t, 3_000, 12_000, 3*time.Minute, 10, c.prices)
		if got := len(clearedAt(reps)) > 0; got != c.want {
			t.Errorf("%s, long tail: cleared %v, want %v", c.name, got, c.want)
		}
	}
	// A large stale result under a short tail: worth clearing where the
	// rewrite is the tail (OpenAI) as where it is every message.
	for _, p := range []pricing.Prices{sonnet, gpt} {
		if at := clearedAt(clearingSession(t, 36_000, 600, 3*time.Minute, 10, p)); len(at) != 1 {
			t.Errorf("%s, short tail: cleared at %v, want once", p.Provider, at)
		}
	}
}

// A compaction is due only when the request as forwarded reaches the
// trigger, with the results cleared before as their placeholders: counted
// whole, they made every later request "due" once a first batch was
// cleared, and each newly stale result was then cleared on its own request
// after request, rewriting the cache each time (costsim, Codex: 37 clearings
// of one or two results, 1.42 times the direct bill).
func TestDueCountsClearedResultsAsPlaceholders(t *testing.T) {
	o := options(t)
	o.Compact.Limit = 40_000 // trigger 36,800
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	out := func(i int) string {
		return `{"stdout":"` + fmt.Sprint("run ", i, " ") + strings.Repeat("ok ", 3_000) + `","exitCode":0}`
	}
	hist := history(user("build", clock))
	dues := 0
	for i := range 30 {
		clock = clock.Add(2 * time.Minute) // a warm cache; results go stale after 15 minutes
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "terminal-execute", fmt.Sprint("make ", i), out(i), false, clock)...)
		res := mustPrepare(t, p, hist)
		r := &res.Report
		d := r.Step(pipeline.StepPrune).Clearing
		if d == nil || !d.Due {
			continue
		}
		dues++
		// What this request would have forwarded without the clearing
		// (the count step's estimate, before a compaction).
		c := r.Step(pipeline.StepCount).Count
		before := c.Tokens + d.ClearedTokens
		if before < c.ThresholdTokens*9/10 {
			t.Fatalf("request %d: a compaction taken as due with %d tokens to forward (trigger %d): %+v", i, before, c.ThresholdTokens, d)
		}
	}
	if dues == 0 {
		t.Fatal("no compaction was ever due: the test needs one")
	}
}

// With OpenAI's prices the rewrite of a clearing is the request as
// forwarded from the earliest edit on. Measured on the client's messages,
// whose early results are whole where the forwarded request has their
// references, the share after the edit looked small and clearings that
// rewrote 45,000 tokens were priced as 7,000 (costsim, Codex): a small
// stale result under a long tail, after large offloaded reads, is not
// worth clearing.
func TestOpenAIClearingPricesTheForwardedTail(t *testing.T) {
	gpt, _ := pricing.Default().Lookup("gpt-5")
	o := options(t)
	o.Compact.Limit = 1_000_000 // no compaction
	o.Prices = gpt
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	var parts []any
	parts = append(parts, user("build", clock))
	for i := range 6 { // offloaded at once: references in the forwarded request
		parts = append(parts, exchange(fmt.Sprint("toolu_file", i), "Read", "big.go", strings.Repeat(fmt.Sprint("line ", i, " of a large file\n"), 12_000), false, clock))
	}
	parts = append(parts, exchange("toolu_make", "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_500)+`","exitCode":0}`, false, clock))
	hist := history(parts...)
	for i := range 12 {
		clock = clock.Add(3 * time.Minute) // warm: OpenAI keeps a prefix 10 minutes
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "Read", "main.go", strings.Repeat(fmt.Sprint("code ", i, " "), 2_000), false, clock)...)
		res := mustPrepare(t, p, hist)
		r := &res.Report
		if r.TokensBefore < 4*r.TokensAfter {
			t.Fatalf("request %d: the client sent %d tokens, %d forwarded: the test needs large offloaded reads", i, r.TokensBefore, r.TokensAfter)
		}
		if s := r.Step(pipeline.StepPrune); s.New > 0 {
			t.Fatalf("request %d: cleared a %d-token result under a tail of %d tokens: %+v", i, s.Clearing.ClearedTokens, r.TokensAfter, s.Clearing)
		}
	}
}

// A compaction a few requests ahead would remove the stale result anyway:
// clearing it on a warm cache saves only the reads until then, and keeps
// the session longer in the dearest requests of its cycle, so the
// clearing that pays with no compaction ahead is not made (costsim,
// Codex: 0.91 times the direct bill clearing, 0.77 not; issue 45: a
// saving counted to the end of the session made batches the next
// compaction superseded).
func TestClearingBeforeACompactionDoesNotPay(t *testing.T) {
	gpt, _ := pricing.Default().Lookup("gpt-5")
	for _, c := range []struct {
		name  string
		limit int
		want  int
	}{{"no compaction ahead", 1_000_000, 1}, {"a compaction ahead", 40_000, 0}} {
		reps := clearingSessionLimit(t, c.limit, 36_000, 12_000, 3*time.Minute, 10, gpt)
		if at := clearedAt(reps); len(at) != c.want {
			t.Errorf("%s: cleared at requests %v, want %d clearing(s)", c.name, at, c.want)
		}
		last := reps[len(reps)-1]
		if c.want == 0 && (last.Pending == 0 || last.Clearing == nil || last.Clearing.Horizon > 3 || last.Clearing.Saving >= last.Clearing.Cost) {
			t.Errorf("%s: want the stale result weighed up to the compaction and left: %+v %+v", c.name, last, last.Clearing)
		}
	}
}

// Consecutive batches: stale output piling up one result a request on a
// warm cache is cleared in batches far apart, each rewriting the cache
// once, never a batch a few requests after the last (issue 45: batches at
// requests 29, 32, 37, 42 and 48, each rewriting 38–48K tokens of the
// cache, because each batch's saving was counted as if it lasted the
// session, while the next batch rewrote the same cache five requests
// later).
func TestConsecutiveBatchesAreFarApart(t *testing.T) {
	o := options(t)
	o.Compact.Limit = 1_000_000 // no compaction in reach: clearing is the only reset
	o.Trigger = pipeline.TriggerThreshold
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	out := func(i int) string {
		return `{"stdout":"` + fmt.Sprint("run ", i, " ") + strings.Repeat("ok ", 6_000) + `","exitCode":0}`
	}
	hist := history(user("build", clock))
	var cleared []int
	for i := range 80 {
		clock = clock.Add(90 * time.Second) // warm; a result is stale 10 requests later
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "terminal-execute", fmt.Sprint("make ", i), out(i), false, clock)...)
		res := mustPrepare(t, p, hist)
		if s := res.Report.Step(pipeline.StepPrune); s.New > 0 && s.Clearing != nil && !s.Clearing.Cold {
			cleared = append(cleared, i)
		}
	}
	t.Logf("batches at requests %v", cleared)
	if len(cleared) < 2 {
		t.Fatalf("batches at requests %v: the test needs several", cleared)
	}
	for k := 1; k < len(cleared); k++ {
		if gap := cleared[k] - cleared[k-1]; gap < 10 {
			t.Fatalf("batches at requests %v: two %d requests apart", cleared, gap)
		}
	}
}

// A client that asks for the 1-hour cache lifetime (cache_control.ttl
// "1h" on its breakpoints) keeps its cache warm over a 6-minute pause: no
// cold sweep then. The lifetime was read from the view before the request
// set it, so every pause past 5 minutes was taken as cold, and the proxy
// rewrote a warm 1-hour cache after each (costsim ttl1h: 1.45 times the
// direct bill).
func TestLongCacheLifetimeIsNotCold(t *testing.T) {
	for _, ttl := range []string{"", "1h"} {
		o := options(t)
		o.Prune.MaxAge, o.Prune.KeepRecent = time.Minute, 1
		clock := now
		o.Now = func() time.Time { return clock }
		p := newPipeline(t, o)
		hist := history(user("build", clock), exchange("toolu_big", "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_000)+`","exitCode":0}`, false, clock))
		cold := 0
		for i := range 4 {
			clock = clock.Add(6 * time.Minute)
			cc := `{"type":"ephemeral"}`
			if ttl != "" {
				cc = `{"type":"ephemeral","ttl":"` + ttl + `"}`
			}
			last, err := agentctx.DecodeMessage([]byte(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"step %d","cache_control":%s}]}`, i, cc)))
			if err != nil {
				t.Fatal(err)
			}
			hist = append(hist, exchange(fmt.Sprint("toolu_", i), "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_000)+`","exitCode":0}`, false, clock)...)
			hist = append(hist, say(fmt.Sprint("ok ", i), clock), last.WithTimestamp(clock))
			res := mustPrepare(t, p, hist)
			d := res.Report.Step(pipeline.StepPrune).Clearing
			if i > 0 && d == nil {
				t.Fatalf("ttl %q, request %d: no stale result weighed: the test needs one", ttl, i)
			}
			if d != nil && d.Cold {
				cold++
			}
		}
		if want := map[string]int{"": 3, "1h": 0}[ttl]; cold != want {
			t.Errorf("ttl %q: %d of 4 requests after a 6-minute pause cold, want %d", ttl, cold, want)
		}
	}
}

// A cold pause in the middle of a long session is where it resets: the
// request after the pause writes its whole history again either way, and
// the summary request read uncached costs about that write, after which
// every request reads the smaller history (issue 45: costsim, Claude Code,
// cold pauses, 0.61× direct with compactions only at the trigger). On a
// warm cache the same session compacts at the trigger only.
func TestColdPauseResetsTheSession(t *testing.T) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	compactedAt := func(pause bool) (at []int, trigger int) {
		o := options(t)
		o.Prices = sonnet
		o.Compact.Limit = 200_000
		o.Compact.Summarizer = compact.SummarizerFunc(func(context.Context, compact.Request) (string, error) {
			return "The build was fixed step by step; " + strings.Repeat("detail ", 400), nil
		})
		clock := now
		o.Now = func() time.Time { return clock }
		p := newPipeline(t, o)
		hist := history(user("build", clock))
		for i := range 60 {
			gap := 40 * time.Second
			if pause && i == 40 {
				gap = 6 * time.Minute // past the 5-minute lifetime
			}
			clock = clock.Add(gap)
			hist = append(hist, exchange(fmt.Sprint("toolu_", i), "Read", fmt.Sprint("f", i, ".go"), strings.Repeat(fmt.Sprint("code ", i, " "), 350), false, clock)...)
			res := mustPrepare(t, p, hist)
			if res.Report.Step(pipeline.StepCompact).Compact.Compacted {
				at = append(at, i)
			}
			trigger = res.Report.Step(pipeline.StepCount).Count.ThresholdTokens
		}
		return at, trigger
	}
	warm, trigger := compactedAt(false)
	cold, _ := compactedAt(true)
	t.Logf("trigger %d; compacted at requests %v warm, %v with a pause before request 40", trigger, warm, cold)
	if len(warm) == 0 || warm[0] <= 40 {
		t.Fatalf("warm: compacted at %v: the test needs the first compaction after request 40", warm)
	}
	if len(cold) == 0 || cold[0] != 40 {
		t.Fatalf("cold pause before request 40: compacted at %v, want at 40", cold)
	}
}

// A client that asks for the 1-hour lifetime pays 2 times the input price
// per token written to the cache, not 1.25: the cost of a clearing's
// cache rewrite is priced at that. The plan priced every write at the
// 5-minute price, so it cleared as readily under the dearer lifetime.
func TestClearingPricesTheHourWrite(t *testing.T) {
	cost := map[string]float64{}
	for _, ttl := range []string{"", "1h"} {
		o := options(t)
		o.Prune.MaxAge, o.Prune.KeepRecent = time.Minute, 1
		clock := now
		o.Now = func() time.Time { return clock }
		p := newPipeline(t, o)
		hist := history(user("build", clock), exchange("toolu_big", "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_000)+`","exitCode":0}`, false, clock))
		for i := range 3 {
			clock = clock.Add(2 * time.Minute)
			cc := `{"type":"ephemeral"}`
			if ttl != "" {
				cc = `{"type":"ephemeral","ttl":"` + ttl + `"}`
			}
			last, err := agentctx.DecodeMessage([]byte(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"step %d","cache_control":%s}]}`, i, cc)))
			if err != nil {
				t.Fatal(err)
			}
			hist = append(hist, exchange(fmt.Sprint("toolu_", i), "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_000)+`","exitCode":0}`, false, clock)...)
			hist = append(hist, say(fmt.Sprint("ok ", i), clock), last.WithTimestamp(clock))
			res := mustPrepare(t, p, hist)
			if d := res.Report.Step(pipeline.StepPrune).Clearing; i == 2 {
				if d == nil || d.Cold || d.Cost <= 0 {
					t.Fatalf("ttl %q: no warm clearing weighed at request %d: %+v", ttl, i, d)
				}
				cost[ttl] = d.Cost
			}
		}
	}
	pr := pricing.Fallback(pricing.Anthropic)
	want := (pr.CacheWrite1h - pr.CacheRead) / (pr.CacheWrite - pr.CacheRead)
	if got := cost["1h"] / cost[""]; math.Abs(got-want) > 0.05*want {
		t.Errorf("a clearing's rewrite under the 1-hour lifetime costs %.3g times the 5-minute one (%v, %v), want %.3g", got, cost["1h"], cost[""], want)
	}
}

// A keep-warm request refreshes the provider's cache during a pause
// (Pipeline.CacheRefreshed): the request after a 6-minute pause whose
// cache was refreshed 4.5 minutes in finds it warm, and no cold sweep
// rewrites the cache that was paid to be kept. Without the record every
// such request was taken as cold.
func TestKeptWarmCacheIsNotCold(t *testing.T) {
	for _, refresh := range []bool{false, true} {
		o := options(t)
		o.Prune.MaxAge, o.Prune.KeepRecent = time.Minute, 1
		clock := now
		o.Now = func() time.Time { return clock }
		p := newPipeline(t, o)
		hist := history(user("build", clock), exchange("toolu_big", "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_000)+`","exitCode":0}`, false, clock))
		mustPrepare(t, p, hist)
		cold := 0
		for i := range 4 {
			if refresh {
				if err := p.CacheRefreshed(context.Background(), clock.Add(270*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			clock = clock.Add(6 * time.Minute)
			hist = append(hist, exchange(fmt.Sprint("toolu_", i), "terminal-execute", "make", `{"stdout":"`+strings.Repeat("ok ", 1_000)+`","exitCode":0}`, false, clock)...)
			hist = append(hist, say(fmt.Sprint("ok ", i), clock), user(fmt.Sprint("step ", i), clock))
			res := mustPrepare(t, p, hist)
			if d := res.Report.Step(pipeline.StepPrune).Clearing; d != nil && d.Cold {
				cold++
			}
		}
		if want := map[bool]int{false: 4, true: 0}[refresh]; cold != want {
			t.Errorf("refreshed %v: %d of 4 requests after a 6-minute pause cold, want %d", refresh, cold, want)
		}
	}
}
