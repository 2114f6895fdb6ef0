package pipeline_test

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
)

// Tests that each kill a mutation of the engine no other test caught
// (issue 24 item 8). Each names the rule it pins.

// TestCompactAgainAfterATailOfGrowth pins the hysteresis of a crossing that
// could not be compacted: the list is compacted again only once it has
// grown by the tail budget (Limit × TailRatio), and by at least 1,000
// tokens when that budget is smaller.
func TestCompactAgainAfterATailOfGrowth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tailRatio float64
		growth    int // the rule's growth for this tail budget
		under     int // a growth below it (and above the other candidate rules)
	}{
		{"tail budget", 0.1, 4_000, 2_500}, // the tail, not a flat 1,000
		{"floor", 0.01, 1_000, 700},        // at least 1,000, not a 400-token tail
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := &countingSummarizer{}
			o := options(t)
			o.NoPrune = true
			o.Compact.Limit, o.Compact.Threshold, o.Compact.TailRatio, o.Compact.Summarizer = 40_000, 0.5, tc.tailRatio, sum
			if got := o.Compact.TailTokens(); got != 4_000 && got != 400 {
				t.Fatalf("tail budget %d", got)
			}
			p := newPipeline(t, o)
			words := func(n int) string { return strings.Repeat("lorem ", n) }
			// One message over the trigger of 20,000: nothing before it to
			// summarize, so the crossing is handled without a summary.
			msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(words(21_000)))}
			r1 := mustPrepare(t, p, msgs)
			if r1.Report.Step(pipeline.StepCompact).Compact.Compacted || r1.Report.TokensBefore < 20_000 {
				t.Fatalf("first call: %d tokens, compacted %v", r1.Report.TokensBefore, r1.Report.Step(pipeline.StepCompact).Compact.Compacted)
			}
			grow := func(n int) {
				msgs = append(msgs, agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("ok")),
					agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(words(n))))
			}
			// Grown by less than the rule's growth: now there is something
			// to summarize, but the crossing was handled.
			grow(tc.under)
			r2 := mustPrepare(t, p, msgs)
			if d := r2.Report.TokensBefore - r1.Report.TokensBefore; d <= tc.under || d >= tc.growth {
				t.Fatalf("grew by %d tokens, want between %d and %d", d, tc.under, tc.growth)
			}
			if r2.Report.Step(pipeline.StepCompact).Compact.Compacted || sum.calls.Load() != 0 {
				t.Fatalf("compacted again after %d tokens of growth, before the %d the rule asks", r2.Report.TokensBefore-r1.Report.TokensBefore, tc.growth)
			}
			if !strings.Contains(strings.Join(r2.Report.Warnings, "\n"), "not compacting again until") {
				t.Errorf("warnings %q", r2.Report.Warnings)
			}
			// Grown past it: compacted.
			grow(tc.growth)
			r3 := mustPrepare(t, p, msgs)
			if !r3.Report.Step(pipeline.StepCompact).Compact.Compacted {
				t.Errorf("not compacted after %d tokens of growth: %q", r3.Report.TokensBefore-r1.Report.TokensBefore, r3.Report.Warnings)
			}
		})
	}
}
