package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// sameMessage reports whether two messages encode alike.
func sameMessage(a, b agentctx.Message) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}

// TestRequestBehindTheCompaction: a request whose messages are only the
// start of what a later request's compaction summarized (a retry, a
// regenerate, a request sent alongside) is prepared from its own messages:
// never the summary alone, its last turn kept; and the session's
// compaction stays for the longer history.
func TestRequestBehindTheCompaction(t *testing.T) {
	msgs := longHistory(14)
	sum := &countingSummarizer{}
	o := options(t)
	o.NoPrune = true
	o.Compact.Limit, o.Compact.Summarizer = 3000, sum
	p := newPipeline(t, o)
	first := mustPrepare(t, p, msgs)
	c1 := first.Report.Step(pipeline.StepCompact).Compact
	if !c1.Compacted {
		t.Fatalf("the long history is not compacted: %+v", c1)
	}
	n := 1 + c1.Stats.CompactedMessageCount // the system prompt is kept
	for _, k := range []int{n, n - 1, n - 2, n - 5} {
		short := msgs[:k]
		res := mustPrepare(t, p, short)
		// The last message sent is the request's own, or the answer
		// repair gives to its last tool call.
		out := res.Messages
		kept := len(out) >= 2 && (sameMessage(out[len(out)-1], short[k-1]) || sameMessage(out[len(out)-2], short[k-1]))
		if !kept {
			t.Errorf("the first %d of the %d messages summarized: %d message(s) sent, the last turn lost", k, n, len(res.Messages))
		}
		if ws := strings.Join(res.Report.Warnings, "\n"); !strings.Contains(ws, "prepared from its own messages") {
			t.Errorf("the first %d: warnings %q", k, res.Report.Warnings)
		}
		// The longer history still gets its summary, byte for byte, and
		// nothing is summarized again for it.
		calls := sum.calls.Load()
		again := mustPrepare(t, p, msgs)
		c := again.Report.Step(pipeline.StepCompact).Compact
		if c.Reused != c1.Stats.CompactedMessageCount || c.Compacted || sum.calls.Load() != calls {
			t.Errorf("after the first %d: the longer history's compaction %+v (summaries %d → %d)", k, c, calls, sum.calls.Load())
		}
		if !sameMessage(again.Messages[1], first.Messages[1]) || len(again.Messages) != len(first.Messages) {
			t.Errorf("after the first %d: the longer history is sent otherwise than before", k)
		}
	}
	// A shorter history that went another way is not behind: the summary
	// is dropped.
	other := append(msgs[:n-2:n-2], user("something else entirely", now))
	res := mustPrepare(t, p, other)
	if ws := strings.Join(res.Report.Warnings, "\n"); !strings.Contains(ws, "summary is dropped") {
		t.Errorf("a diverged history: warnings %q", res.Report.Warnings)
	}
}

// fullStore is a workspace store whose disk is full while full is set:
// archives cannot be written (the tool results, written before, can).
type fullStore struct {
	workspace.Store
	full  atomic.Bool
	puts  atomic.Int32
	fails atomic.Int32
}

func (s *fullStore) Put(ctx context.Context, ns string, a workspace.Artifact) (workspace.Info, error) {
	if strings.HasPrefix(a.ID, pipeline.ArchiveIDPrefix) {
		s.puts.Add(1)
		if s.full.Load() {
			s.fails.Add(1)
			return workspace.Info{}, errors.New("no space left on device")
		}
	}
	return s.Store.Put(ctx, ns, a)
}

// grow returns msgs followed by k exchanges whose results are size
// characters.
func grow(msgs []agentctx.Message, from, k, size int) []agentctx.Message {
	out := append([]agentctx.Message(nil), msgs...)
	for i := range k {
		out = append(out, exchange(fmt.Sprintf("toolu_more_%03d", from+i), "Read", "cat g", strings.Repeat(fmt.Sprintf("more %d\n", from+i), size/7), false, now)...)
	}
	return out
}

// TestFailedArchiveIsRetriedOnTheNextRequest: with the disk full when
// compaction is due nothing is compacted, and the next request over the
// trigger compacts once space is back; a request over the limit is never
// prepared uncompacted while a compaction can bring it under.
func TestFailedArchiveIsRetriedOnTheNextRequest(t *testing.T) {
	h := longHistory(14)
	store := &fullStore{Store: memstore.New()}
	o := options(t)
	o.NoPrune = true
	o.Store, o.Sessions = store, memsession.New()
	o.Compact.Limit = tokensOf(h) * 104 / 100 // over the trigger (92%), within the limit
	sum := &countingSummarizer{}
	o.Compact.Summarizer = sum
	p := newPipeline(t, o)

	store.full.Store(true)
	res := mustPrepare(t, p, h)
	if c := res.Report.Step(pipeline.StepCompact).Compact; c.Compacted || store.fails.Load() != 1 || !strings.Contains(strings.Join(res.Report.Warnings, "\n"), "could not be archived") {
		t.Fatalf("disk full: compact %+v, archive writes failed %d, warnings %q", c, store.fails.Load(), res.Report.Warnings)
	}
	// Still full: the next request over the trigger tries again.
	h = grow(h, 0, 1, 70)
	mustPrepare(t, p, h)
	if store.fails.Load() != 2 {
		t.Errorf("disk still full: %d archive writes tried, want 2 (one per request over the trigger)", store.fails.Load())
	}
	// Space is back: the very next request over the trigger compacts.
	store.full.Store(false)
	h = grow(h, 1, 1, 70)
	res = mustPrepare(t, p, h)
	if c := res.Report.Step(pipeline.StepCompact).Compact; !c.Compacted || !res.Report.BelowThreshold {
		t.Errorf("space is back: compact %+v, warnings %q", c, res.Report.Warnings)
	}
}

// TestOverTheLimitIsCompactedWhateverFailedBefore: a failed summary backs
// off within the limit (the model is not paid for on every request), but
// a request over the limit is compacted at once; so is a failed archive,
// over the limit, on the next request.
func TestOverTheLimitIsCompactedWhateverFailedBefore(t *testing.T) {
	t.Run("summary", func(t *testing.T) {
		h := longHistory(14)
		sum := &flakySummarizer{}
		sum.failing.Store(true)
		o := options(t)
		o.NoPrune = true
		o.Compact.Limit, o.Compact.Summarizer, o.Compact.MaxRetries = tokensOf(h)*104/100, sum, -1
		p := newPipeline(t, o)
		res := mustPrepare(t, p, h)
		if c := res.Report.Step(pipeline.StepCompact).Compact; c.Compacted || c.Reason != compact.ReasonSummarizerFailed || sum.calls.Load() != 1 {
			t.Fatalf("failing model: compact %+v, %d calls", c, sum.calls.Load())
		}
		sum.failing.Store(false)
		// Within the limit: backing off, no summary asked.
		h = grow(h, 0, 1, 70)
		res = mustPrepare(t, p, h)
		if res.Report.EstimatedTokens > res.Report.Limit || sum.calls.Load() != 1 {
			t.Fatalf("within the limit (%d of %d): %d summaries asked, want no new one while backing off", res.Report.EstimatedTokens, res.Report.Limit, sum.calls.Load())
		}
		// Over the limit: compacted at once.
		h = grow(h, 1, 1, 2000)
		res = mustPrepare(t, p, h)
		r := res.Report
		if c := r.Step(pipeline.StepCompact).Compact; !c.Compacted || r.EstimatedTokens > r.Limit {
			t.Errorf("over the limit: compact %+v, %d tokens sent against a limit of %d; warnings %q", c, r.EstimatedTokens, r.Limit, r.Warnings)
		}
	})
	t.Run("archive", func(t *testing.T) {
		h := longHistory(14)
		store := &fullStore{Store: memstore.New()}
		o := options(t)
		o.NoPrune = true
		o.Store, o.Sessions = store, memsession.New()
		o.Compact.Limit = tokensOf(h) * 104 / 100
		p := newPipeline(t, o)
		store.full.Store(true)
		mustPrepare(t, p, h)
		store.full.Store(false)
		h = grow(h, 0, 1, 2000)
		res := mustPrepare(t, p, h)
		r := res.Report
		if c := r.Step(pipeline.StepCompact).Compact; !c.Compacted || r.EstimatedTokens > r.Limit {
			t.Errorf("over the limit after a failed archive: compact %+v, %d tokens against %d; warnings %q", c, r.EstimatedTokens, r.Limit, r.Warnings)
		}
	})
}

// flakySummarizer fails while failing is set.
type flakySummarizer struct {
	failing atomic.Bool
	calls   atomic.Int32
}

func (s *flakySummarizer) Summarize(ctx context.Context, req compact.Request) (string, error) {
	n := s.calls.Add(1)
	if s.failing.Load() {
		return "", fmt.Errorf("model overloaded (call %d)", n)
	}
	return fmt.Sprintf("%s\n\nsummary %d of %d messages", compact.SummaryTitle, n, len(req.Messages)), nil
}
