package pipeline

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pricing"
)

// toyPlan has round prices (a token read costs 1, written 10) and round
// sizes, so that its outcomes can be computed by hand.
func toyPlan() *plan {
	return &plan{read: 1, write: 10, output: 50, growth: 100, after: 200, horizon: 50}
}

// run, by hand: from 500 tokens with 400 cached, growing 100 a request,
// trigger 1,000: requests of 500 (400 read, 100 written: 1,400), 600
// (1,500), 700 (1,600), 800 (1,700), 900 (1,800); the sixth, at 1,000, is
// compacted: its summary request (900 read, 100 written, 10 output tokens:
// 1,900 + 500) and the compacted request (200 written: 2,000).
func TestPlanRunToTheCompaction(t *testing.T) {
	pl := toyPlan()
	pl.summary = 10
	o := pl.run(500, 400, 1000, pl.horizon)
	want := 1400.0 + 1500 + 1600 + 1700 + 1800 + (900 + 1000 + 500) + 2000
	if !o.compacted || o.requests != 6 || o.cost != want {
		t.Fatalf("run = %+v, want 6 requests ending in a compaction, cost %v", o, want)
	}
	// Without a trigger in reach, the horizon ends it.
	if o := pl.run(500, 400, 1e9, 3); o.compacted || o.requests != 3 || o.cost != 1400+1500+1600 {
		t.Fatalf("run to the horizon = %+v", o)
	}
}

// The cycle's rate, by hand: after a compaction the request is 200 tokens,
// cached; the cycle runs 300 (200 read, 100 written: 1,200), 400 (1,300),
// then at 500 compacts (400 read, 100 written; 200 written again: 3,400):
// 5,900 over 3 requests.
func TestPlanCycle(t *testing.T) {
	pl := toyPlan()
	if got, want := pl.cycle(500), (1200.0+1300+(400+1000)+2000)/3; got != want {
		t.Fatalf("cycle(500) = %v, want %v", got, want)
	}
	// The cheapest trigger is neither the earliest nor the latest: early
	// ones compact all the time, late ones read a long history.
	best, rate := pl.trigger(300, 20_000)
	if best <= 300 || best >= 20_000 || rate > pl.cycle(300) || rate > pl.cycle(20_000) {
		t.Fatalf("trigger = %d at %v; cycles: 300 %v, 20,000 %v", best, rate, pl.cycle(300), pl.cycle(20_000))
	}
	// Without growth there is nothing to weigh: the latest.
	pl.growth = 0
	if best, _ := pl.trigger(300, 20_000); best != 20_000 {
		t.Fatalf("trigger without growth = %d, want 20,000", best)
	}
}

// A clearing's saving ends at the compaction that would remove the same
// tokens: the batch that pays with no compaction ahead is not made when
// the compaction is a request or two away (issue 45: a saving counted to
// the end of the session made a batch that the next one superseded).
func TestPlanWeighsClearingUpToTheCompaction(t *testing.T) {
	pl := toyPlan()
	// 3,000 tokens, 1,000 of them stale, the cache breaking at 0 (every
	// message rewritten): 2,000 rewritten at 9 more a token = 18,000
	// against 1,000 a request saved.
	far := pl.weigh(3000, 2900, 1000, 1, 0, 1e9, 0)
	if !far.clear || far.horizon != pl.horizon || far.cost != 18_000 {
		t.Fatalf("no compaction ahead: %+v, want cleared over %d requests, cost 18,000", far, pl.horizon)
	}
	rate := pl.cycle(3300)
	near := pl.weigh(3000, 2900, 1000, 1, 0, 3300, rate)
	if near.clear || near.horizon != 4 {
		t.Fatalf("a compaction 4 requests ahead: %+v, want not cleared", near)
	}
	// Nor is a clearing that costs nothing, a request before the
	// compaction: it would keep the session in the dearest requests of
	// its cycle, where the compaction resets it.
	if w := pl.weigh(3000, 2900, 1000, 1, 2000, 3100, pl.cycle(3100)); w.clear || w.cost != 0 {
		t.Fatalf("a free clearing before the compaction: %+v, want not cleared", w)
	}
	// Where the break keeps most of the prefix (OpenAI's cache, an edit
	// near the end), a small batch pays that would not with every
	// message rewritten.
	if w := pl.weigh(3000, 2900, 200, 1, 0, 1e9, 0); w.clear {
		t.Fatalf("200 tokens, every message rewritten: %+v, want not cleared", w)
	}
	if w := pl.weigh(3000, 2900, 200, 1, 2700, 1e9, 0); !w.clear || w.cost != 900 {
		t.Fatalf("200 tokens, the last 100 rewritten: %+v, want cleared at a cost of 900", w)
	}
	// Read-backs are paid: the same clearing expected to be read back.
	pl.readBack = far.saving
	if w := pl.weigh(3000, 2900, 1000, 1, 0, 1e9, 0); w.clear {
		t.Fatalf("a clearing whose read-back costs its saving: %+v", w)
	}
}

// A compaction due now is weighed against clearing instead: the
// compaction's reset wins when what clearing frees is small, clearing
// when it frees most of the history.
func TestPlanDueCompactionOrClearing(t *testing.T) {
	pl := toyPlan()
	rate := pl.cycle(3000)
	if w := pl.weigh(3000, 2900, 200, 1, 0, 3000, rate); w.clear {
		t.Fatalf("due, 200 tokens stale: %+v, want the compaction", w)
	}
	if w := pl.weigh(3000, 2900, 2700, 1, 0, 3000, rate); !w.clear {
		t.Fatalf("due, 2,700 tokens stale: %+v, want the clearing", w)
	}
}

// planPrices: OpenAI bills no write, a provider without a cache bills
// every token as input.
func TestPlanPrices(t *testing.T) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	gpt, _ := pricing.Default().Lookup("gpt-5")
	eq := func(a, b float64) bool { return math.Abs(a-b) < 1e-15 }
	r, w, in, _ := planPrices(sonnet, true, 0)
	if !eq(r, sonnet.CacheRead/1e6) || !eq(w, sonnet.CacheWrite/1e6) || !eq(in, sonnet.Input/1e6) {
		t.Errorf("sonnet: %v %v %v", r, w, in)
	}
	if r, w, in, _ := planPrices(gpt, true, time.Hour); !eq(r, gpt.CacheRead/1e6) || !eq(w, in) {
		t.Errorf("gpt-5: read %v write %v input %v", r, w, in)
	}
	if r, w, in, _ := planPrices(sonnet, false, time.Hour); r != in || w != in {
		t.Errorf("sonnet without a cache: read %v write %v input %v", r, w, in)
	}
	// The hour's writes cost 2 times the input, the 5 minutes' 1.25 times.
	if _, w, _, _ := planPrices(sonnet, true, time.Hour); sonnet.CacheWrite1h <= sonnet.CacheWrite || !eq(w, sonnet.CacheWrite1h/1e6) {
		t.Errorf("sonnet, 1-hour lifetime: write %v, want %v", w, sonnet.CacheWrite1h/1e6)
	}
}

// The cache model is calibrated by the usage reported: a request that
// sent the prefix the one before left, on a warm cache, measures the share
// of it read from the cache; the plan prices its requests with that share.
func TestCacheHitCalibration(t *testing.T) {
	st := &state{}
	report := func(read, write, input int, intact bool) {
		st.Intact = intact
		st.Counted += 1_000
		st.observe(pricing.Usage{CacheRead: read, CacheWrite5m: write, Uncached: input}, 0, 1)
	}
	report(0, 10_000, 0, false) // the first: nothing to measure
	for i := range 4 {
		// 11,000, 12,000, … tokens, of which only the first 5,500 (half
		// the prefix left before) are read: the client's breakpoints miss.
		prev := 10_000 + 1_000*i
		report(prev/2, prev/2+1_000, 0, true)
	}
	if u := st.Usage; u.HitN != 4 || math.Abs(u.Hit-0.5) > 1e-9 || u.hit() != u.Hit {
		t.Fatalf("after four half reads: hit %v over %d reports", u.Hit, u.HitN)
	}
	// A request after an edit or a cold gap reads less for its own
	// reasons: it measures nothing.
	report(0, 15_000, 0, false)
	if u := st.Usage; u.HitN != 4 || math.Abs(u.Hit-0.5) > 1e-9 {
		t.Fatalf("a broken prefix measured the cache: hit %v over %d reports", u.Hit, u.HitN)
	}
	// Too few reports: the model assumes the cache serves the prefix.
	if h := (&usageState{Hit: 0.2, HitN: 2}).hit(); h != 1 {
		t.Fatalf("hit after two reports = %v, want 1", h)
	}
	if h := (*usageState)(nil).hit(); h != 1 {
		t.Fatalf("hit without reports = %v, want 1", h)
	}
	// Priced with half the prefix served: 1,000 cached tokens of 2,000
	// cost 500 reads and 1,500 writes.
	pl := toyPlan()
	pl.hit = 0.5
	if got := pl.request(1_000, 2_000); got != 500*1+1_500*10 {
		t.Fatalf("request at hit 0.5 = %v", got)
	}
	// A clearing loses what the cache would have served: half as much.
	pl.hit = 1
	full := pl.request(1_000, 2_000) - pl.request(0, 2_000)
	pl.hit = 0.5
	if half := pl.request(1_000, 2_000) - pl.request(0, 2_000); half != full/2 {
		t.Fatalf("the rewrite at hit 0.5 = %v, at 1 %v", half, full)
	}
}

// A cold cache makes a compaction a cheap reset, by hand with the toy
// prices and a compaction that leaves 100 tokens (trigger 1,000, summary
// 10 tokens). The cycle: requests of 200 to 900 (1,100 to 1,800 each:
// 11,600), then at 1,000 the summary request (900 read, 100 written, 500
// of output) and the compacted request (100 written): 3,400; 15,000 over 9
// requests, a rate of 1,666.67. Cold at 800: left alone, 8,000 (all
// written) + 1,800 + 3,400 = 13,200 over 3 requests, net 8,200; reset now,
// 8,000 + 500 + 1,000 = 9,500 over 1, net 7,833.33: reset. Cold at 300:
// left alone 3,000 + 1,300 + … + 1,800 + 3,400 = 15,700 over 8, net
// 2,366.67; reset 4,500, net 2,833.33: left alone (issue 45: the cold
// pauses of a long session are where it resets).
func TestPlanColdReset(t *testing.T) {
	pl := toyPlan()
	pl.summary, pl.after = 10, 100
	rate := pl.cycle(1000)
	if want := 15000.0 / 9; math.Abs(rate-want) > 1e-9 {
		t.Fatalf("cycle(1000) = %v, want %v", rate, want)
	}
	if keep := pl.run(800, 0, 1000, planHorizon); keep.cost != 13200 || keep.requests != 3 {
		t.Fatalf("cold at 800 left alone = %+v, want 13,200 over 3", keep)
	}
	if !pl.coldReset(800, 1000, rate) {
		t.Fatal("cold at 800: not reset, want a reset (net 7,833 against 8,200)")
	}
	if pl.coldReset(300, 1000, rate) {
		t.Fatal("cold at 300: reset, want none (net 2,833 against 2,367)")
	}
	if pl.coldReset(150, 1000, rate) || pl.coldReset(1000, 1000, rate) {
		t.Fatal("reset under twice what a compaction leaves, or at the trigger (the compaction is due anyway)")
	}
	pl.local = true
	if pl.coldReset(800, 1000, rate) {
		t.Fatal("an offline summarizer reset: it compacts when the window needs it")
	}
}

// TestPlanColdShare: a session that pauses past the cache's lifetime
// writes its whole prefix again at each pause; the plan expects its share
// of cold requests so far (shrunk by coldPrior) to go on, and a request's
// expected cost grows with its cached prefix.
func TestPlanColdShare(t *testing.T) {
	for _, tc := range []struct {
		colds, requests int
		want            float64
	}{
		{0, 0, 0}, {0, 100, 0}, {1, 0, 1.0 / coldPrior}, {2, 12, 0.1}, {9, 132, 9.0 / 140},
	} {
		if got := coldShare(tc.colds, tc.requests); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("coldShare(%d, %d) = %v, want %v", tc.colds, tc.requests, got, tc.want)
		}
	}
	pl := toyPlan()
	// 400 of 500 cached: warm, 400 read and 100 written (1,400); with one
	// request in ten cold, 360 read and 140 written (1,760).
	if got := pl.request(400, 500); got != 1400 {
		t.Fatalf("warm request = %v, want 1,400", got)
	}
	pl.cold = 0.1
	if got := pl.request(400, 500); math.Abs(got-1760) > 1e-9 {
		t.Fatalf("request with a tenth cold = %v, want 1,760", got)
	}
	if got := pl.request(0, 500); got != 5000 {
		t.Fatalf("cold request = %v, want 5,000 whatever the share", got)
	}
	// The share favours a smaller history: the cheapest trigger of a
	// pausing session is earlier than a warm one's (900 warm, 600 with a
	// fifth of the requests cold).
	pl.summary, pl.cold = 10, 0
	warm, _ := pl.trigger(300, 3000)
	pl.cold = 0.2
	cold, _ := pl.trigger(300, 3000)
	if warm != 900 || cold != 600 {
		t.Fatalf("trigger warm = %d, with a fifth of requests cold = %d; want 900 and 600", warm, cold)
	}
}

// TestGeneratedSummary: the plan prices as output only what the
// summarizer wrote, not the pointers the compaction appends (issue 45:
// 6,000 tokens were priced for summaries of 2,500).
func TestGeneratedSummary(t *testing.T) {
	body := "# Summary\n\n## Task\n- build it\n"
	with := compact.WithPointers(body, []compact.Pointer{{Kind: compact.PointerResult, ArtifactID: "tool_result_x", ToolName: "Bash"}})
	if !strings.Contains(with, compact.PointersTitle) {
		t.Fatalf("WithPointers added no pointers section: %q", with)
	}
	if got := generated(with); strings.TrimSpace(got) != strings.TrimSpace(body) {
		t.Fatalf("generated = %q, want %q", got, body)
	}
	if got := generated(body); got != body {
		t.Fatalf("generated of a summary without pointers = %q", got)
	}
}
