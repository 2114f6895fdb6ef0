package pipeline_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
)

// hangingSummarizer never answers: it waits for its context.
type hangingSummarizer struct{ calls atomic.Int32 }

func (s *hangingSummarizer) Summarize(ctx context.Context, req compact.Request) (string, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return "", ctx.Err()
}

// A request over the limit whose summary fails (an error, or a summary
// that times out) is compacted with the extractive summary, on a deadline
// of its own, instead of going out over the limit, which the provider
// would refuse (issue 49.3: only the proxy's upstream summarizer fell
// back; with any other, as agentctx proxy --summarizer anthropic or a
// library's own, the request went upstream uncompacted). Within the
// limit a failed summary still backs off (TestOverTheLimitIsCompactedWhateverFailedBefore).
func TestOverTheLimitFallsBackToTheExtractiveSummary(t *testing.T) {
	for _, c := range []struct {
		name    string
		summ    compact.Summarizer
		attempt time.Duration
	}{
		{"summary error", &countingSummarizer{fail: true}, 0},
		{"summary timeout", &hangingSummarizer{}, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := longHistory(14)
			o := options(t)
			o.NoPrune = true
			o.Compact.Limit, o.Compact.Summarizer, o.Compact.MaxRetries = tokensOf(h)*90/100, c.summ, -1
			o.Compact.AttemptTimeout = c.attempt
			p := newPipeline(t, o)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			res, err := p.Prepare(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Report
			cr := r.Step(pipeline.StepCompact).Compact
			if !cr.Compacted || r.EstimatedTokens > r.Limit {
				t.Fatalf("over the limit, the summary failing: compact %+v, %d tokens sent against a limit of %d; warnings %q", cr, r.EstimatedTokens, r.Limit, r.Warnings)
			}
			if s := res.Messages[1].Content.AsText(); !strings.Contains(s, compact.SummaryTitle) || strings.Contains(s, "summary 1 of") {
				t.Errorf("the summary sent is not the extractive one: %.200q", s)
			}
			if ws := strings.Join(r.Warnings, "\n"); !strings.Contains(ws, "extractive summary") {
				t.Errorf("no warning names the fallback: %q", r.Warnings)
			}
		})
	}
}

// The fallback needs a caller still there: a request whose client went
// away during the summary gets no summary at all.
func TestOverTheLimitNoFallbackForACallerGone(t *testing.T) {
	h := longHistory(14)
	o := options(t)
	o.NoPrune = true
	sum := &hangingSummarizer{}
	o.Compact.Limit, o.Compact.Summarizer, o.Compact.MaxRetries = tokensOf(h)*90/100, sum, -1
	p := newPipeline(t, o)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := p.Prepare(ctx, h); err == nil {
		t.Fatal("a cancelled request was prepared")
	}
	if sum.calls.Load() != 1 {
		t.Errorf("%d summaries asked, want 1", sum.calls.Load())
	}
}

// SummaryRequired keeps a failed summary an error, over the limit too:
// no fallback writes it.
func TestOverTheLimitSummaryRequiredFails(t *testing.T) {
	h := longHistory(14)
	o := options(t)
	o.NoPrune = true
	o.Compact.Limit, o.Compact.Summarizer, o.Compact.MaxRetries, o.Compact.SummaryRequired = tokensOf(h)*90/100, &countingSummarizer{fail: true}, -1, true
	if _, err := newPipeline(t, o).Prepare(t.Context(), h); err == nil || !strings.Contains(err.Error(), "model unavailable") {
		t.Errorf("err = %v, want the summarizer's failure", err)
	}
}
