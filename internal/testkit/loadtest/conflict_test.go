package loadtest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// raceStore is a session store that lets another replica save the session
// between the Load and the Save of the next Prepare, once: the window in
// which the proxy's usage report of the previous answer (Observe, run
// after the answer reached the client) races the client's next request.
type raceStore struct {
	session.Store
	armed  atomic.Bool
	during func(ctx context.Context)
}

func (s *raceStore) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	data, v, err := s.Store.Load(ctx, ns, id)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		s.during(ctx)
	}
	return data, v, err
}

// TestCompactionRerunOnConflict guards against what the fleet load test saw
// as orphan archives: when the session state changes between the Load and
// the Save of a Prepare that compacts (here: replica b records the usage
// of the previous answer, as the proxy does after every answer), the
// Prepare's Save fails its compare-and-swap and pipeline's update loop
// runs the whole step again, compaction included: without care the
// summarizer would be called twice for one compaction (with the upstream
// summarizer, two paid model calls) and the first attempt's archive would
// stay behind, named by nothing, when the second attempt cut elsewhere.
//
// The pipeline's re-run reuses the summary it made (Pipeline remembers the
// summaries of the middles it summarized), so the summarizer is called
// once and the re-run cuts where the first attempt did.
func TestCompactionRerunOnConflict(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	shared := memsession.New()
	var summaries atomic.Int64
	summ := compact.SummarizerFunc(func(ctx context.Context, req compact.Request) (string, error) {
		summaries.Add(1)
		return compact.SummaryTitle + "\n\n## Current state\n- steps run", nil
	})
	rs := &raceStore{Store: shared}
	open := func(sessions session.Store) *pipeline.Pipeline {
		p, err := pipeline.New(pipeline.Options{
			SessionID: "race",
			Store:     store,
			Sessions:  sessions,
			Workspace: workspace.Options{InlineLimit: 8000},
			NoPrune:   true,
			Compact:   compact.Options{Limit: 4000, Summarizer: summ, MaxRetries: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	a, b := open(rs), open(shared)
	rs.during = func(ctx context.Context) {
		if err := b.Observe(ctx, pricing.Usage{Uncached: 5000}, 0); err != nil {
			t.Errorf("replica b: observe: %v", err)
		}
	}
	compactions := 0
	for k := range 12 {
		msgs := history(t, k)
		before := summaries.Load()
		rs.armed.Store(true)
		res, err := a.Prepare(ctx, msgs)
		if err != nil {
			t.Fatalf("request %d: %v", k, err)
		}
		n := summaries.Load() - before
		done := res.Report.Session.Compactions - compactions
		compactions = res.Report.Session.Compactions
		if int(n) != done {
			t.Errorf("request %d: %d compaction(s) recorded, summarizer called %d time(s)", k, done, n)
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction: the test exercised nothing")
	}
	archives, err := store.Query(ctx, workspace.DefaultNamespace,
		workspace.Filter{Metadata: workspace.Metadata{workspace.KeyContextType: pipeline.ContextCompactionArchive, workspace.KeySessionID: "race"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != compactions {
		t.Errorf("%d compaction(s), %d archive(s): the extra ones are named by no request", compactions, len(archives))
	}
}

// history is session 0's messages of request k of the load test.
func history(t *testing.T, k int) []agentctx.Message {
	t.Helper()
	var body struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(requestBody(0, k), &body); err != nil {
		t.Fatal(err)
	}
	msgs, err := agentctx.UnmarshalMessages(body.Messages)
	if err != nil {
		t.Fatalf("request %d: %v", k, err)
	}
	return msgs
}
