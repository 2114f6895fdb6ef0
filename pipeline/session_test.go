package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// startsWith reports whether list b starts with every message of a, byte
// for byte.
func startsWith(t *testing.T, b, a []agentctx.Message) bool {
	t.Helper()
	if len(b) < len(a) {
		return false
	}
	x, err1 := agentctx.MarshalMessages(a)
	y, err2 := agentctx.MarshalMessages(b[:len(a)])
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(x, y)
}

// growing is a session of n exchanges of terminal output, one a minute,
// each large enough to be worth pruning once stale.
func growing(n int, start time.Time, withTimestamps bool) []agentctx.Message {
	var msgs []agentctx.Message
	for i := range n {
		at := start.Add(time.Duration(i) * time.Minute)
		out := fmt.Sprintf(`{"stdout":"%s","stderr":"","exitCode":0}`, strings.Repeat(fmt.Sprintf("step %d ok ", i), 60))
		ex := exchange(fmt.Sprintf("toolu_%03d", i), "bash", "make", out, false, at)
		if !withTimestamps {
			for k := range ex {
				ex[k] = ex[k].WithoutFields(agentctx.FieldTimestamp)
			}
		}
		msgs = append(msgs, ex...)
	}
	return msgs
}

// TestDecisionsAreStickyAcrossCalls replays a growing session one request
// at a time: every prepared list starts with the previous one byte for
// byte, except on the calls that report a change of prefix (a prune batch,
// a compaction), and there are few of those.
func TestDecisionsAreStickyAcrossCalls(t *testing.T) {
	start := now.Add(-3 * time.Hour)
	all := growing(120, start, true)
	o := options(t)
	o.Compact.Limit = 6_000
	o.ClearAtLeast = 1_000
	o.Clearing = pipeline.ClearBatched // the batches are what is tested
	var clock time.Time
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	var prev []agentctx.Message
	breaks, changes, compactions, pruned := 0, 0, 0, 0
	for n := 2; n <= len(all); n += 2 {
		ts, _ := all[n-1].Timestamp()
		clock = ts.Add(time.Second)
		res := mustPrepare(t, p, all[:n])
		r := &res.Report
		changed := r.Session.PrefixChanged
		if changed {
			changes++
		}
		if prev != nil && !startsWith(t, res.Messages, prev) {
			if !changed {
				t.Fatalf("request %d: the prefix changed without a reported batch or compaction", n/2)
			}
			breaks++
		}
		if changed && r.Step(pipeline.StepCompact).Compact.Compacted {
			compactions++
		}
		pruned += r.Step(pipeline.StepPrune).New
		prev = res.Messages
	}
	if compactions == 0 || pruned == 0 {
		t.Fatalf("the session should have pruned and compacted: %d compactions, %d pruned", compactions, pruned)
	}
	if batches := changes - compactions; batches >= pruned/2 {
		t.Errorf("%d results pruned in %d batches: want few, large batches", pruned, batches)
	}
	t.Logf("60 requests: %d cache breaks, %d compactions, %d results pruned", breaks, compactions, pruned)
}

// TestStateSurvivesTheProcess: a second Pipeline over the same session
// store re-applies the first one's decisions, byte for byte, and does not
// compact again.
func TestStateSurvivesTheProcess(t *testing.T) {
	msgs := longHistory(14)
	grown := append(slices.Clone(msgs), exchange("toolu_new", "Read", "cat g", "small", false, now)...)
	sum := &countingSummarizer{}
	o := options(t)
	o.Compact.Limit, o.Compact.Summarizer = 3000, sum
	first := mustPrepare(t, newPipeline(t, o), msgs)
	if !first.Report.Step(pipeline.StepCompact).Compact.Compacted {
		t.Fatal("the first request should compact")
	}
	// A new Pipeline, as a new process would make, over the same directory.
	second := mustPrepare(t, newPipeline(t, o), grown)
	if sum.calls.Load() != 1 || !startsWith(t, second.Messages, first.Messages) {
		t.Errorf("summarizer calls %d; prefix kept %v", sum.calls.Load(), startsWith(t, second.Messages, first.Messages))
	}
	if s := second.Report.Session; s == nil || s.Requests != 2 || s.Compactions != 1 || s.Version != 2 {
		t.Errorf("session report %+v", s)
	}
	// Another session in the same store starts afresh.
	o.SessionID = "other"
	third := mustPrepare(t, newPipeline(t, o), grown)
	if s := third.Report.Session; s.Requests != 1 || sum.calls.Load() != 2 {
		t.Errorf("other session: %+v, summarizer calls %d", s, sum.calls.Load())
	}
}

// TestConcurrentWritersLoseNoUpdate: Pipelines in several goroutines (as
// proxy replicas would) prepare one session at once; the state counts every
// request and the session is compacted once.
func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	msgs := longHistory(14)
	sum := &countingSummarizer{}
	o := options(t)
	o.NoPrune = true
	o.Compact.Limit, o.Compact.Summarizer = 3000, sum
	o.Sessions = memsession.New()
	o.Store = memstore.New()
	const workers, each = 4, 5
	var wg sync.WaitGroup
	outs := make([][]byte, workers*each)
	for w := range workers {
		wg.Go(func() {
			p, err := pipeline.New(o)
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			for i := range each {
				res, err := p.Prepare(context.Background(), msgs)
				if err != nil {
					t.Error(err)
					return
				}
				outs[w*each+i], _ = agentctx.MarshalMessages(res.Messages)
			}
		})
	}
	wg.Wait()
	p := newPipeline(t, o)
	res := mustPrepare(t, p, msgs)
	if s := res.Report.Session; s.Requests != workers*each+1 || s.Compactions != 1 {
		t.Errorf("session %+v, want %d requests and 1 compaction", s, workers*each+1)
	}
	// The summary may be written by two racers, but one wins and every
	// later request sends it.
	last, _ := agentctx.MarshalMessages(res.Messages)
	same := 0
	for _, out := range outs {
		if bytes.Equal(out, last) {
			same++
		}
	}
	if same < len(outs)-workers {
		t.Errorf("%d of %d requests sent the final list", same, len(outs))
	}
}

// TestPruneWithoutTimestamps: SDK messages carry no timestamp; the time a
// call first saw a result stands in for it.
func TestPruneWithoutTimestamps(t *testing.T) {
	all := growing(12, now, false)
	o := options(t)
	o.ClearAtLeast = -1
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	res := mustPrepare(t, p, all[:12]) // six results, seen now
	if n := res.Report.Step(pipeline.StepPrune).Changed; n != 0 {
		t.Fatalf("pruned %d results that were just seen", n)
	}
	clock = now.Add(20 * time.Minute)
	res = mustPrepare(t, p, all) // twelve: the first six are 20 minutes old
	s := res.Report.Step(pipeline.StepPrune)
	if s.Changed != 6 || s.New != 6 {
		t.Fatalf("pruned %d (%d new), want the 6 old results (no timestamps)", s.Changed, s.New)
	}
	got := resultText(res.Messages, "toolu_000")
	if !strings.HasPrefix(got, prune.DefaultPlaceholder) || !strings.Contains(got, `get_knowledge_by_id(artifact_id="tool_result_toolu_000")`) {
		t.Errorf("placeholder %q", got)
	}
	// Read back through the agent tool: the original.
	back, err := p.Workspace().Execute(context.Background(), "get_knowledge_by_id", []byte(`{"artifact_id":"tool_result_toolu_000"}`))
	if err != nil || back != resultText(all, "toolu_000") {
		t.Errorf("read back %q, %v", back, err)
	}
}

// TestReferencesAreNeverPruned: a large result replaced by a reference
// keeps its reference when it grows stale, so the model can still find it.
func TestReferencesAreNeverPruned(t *testing.T) {
	big := `{"stdout":"` + strings.Repeat("log line\\n", 6000) + `","exitCode":0}`
	msgs := history(user("go", now.Add(-time.Hour)), exchange("toolu_big", "Bash", "make", big, false, now.Add(-time.Hour)))
	for i := range 6 {
		msgs = append(msgs, exchange(fmt.Sprintf("toolu_%d", i), "Read", "cat", "text", false, now)...)
	}
	o := options(t)
	o.ClearAtLeast = -1
	res := mustPrepare(t, newPipeline(t, o), msgs)
	if got := resultText(res.Messages, "toolu_big"); !strings.HasPrefix(got, "<knowledge_list>") {
		t.Errorf("the reference was replaced: %.80q", got)
	}
}

// TestSummaryIsOfTheOriginals: the summary describes what the tools
// returned, not prune's placeholders, and holds nothing volatile.
func TestSummaryIsOfTheOriginals(t *testing.T) {
	var seen []agentctx.Message
	sum := compact.SummarizerFunc(func(_ context.Context, req compact.Request) (string, error) {
		seen = slices.Clone(req.Messages)
		return "summary of " + fmt.Sprint(len(req.Messages)) + " messages; archive " + req.Archive, nil
	})
	all := growing(40, now.Add(-2*time.Hour), true)
	o := options(t)
	o.ClearAtLeast = -1
	o.Compact.Limit, o.Compact.Summarizer = 2000, sum
	res := mustPrepare(t, newPipeline(t, o), all)
	if !res.Report.Step(pipeline.StepCompact).Compact.Compacted || res.Report.Step(pipeline.StepPrune).Changed == 0 {
		t.Fatalf("want pruned and compacted: %+v", res.Report.Steps)
	}
	for r := range agentctx.ToolResults(seen) {
		if strings.Contains(r.Content.AsText(), prune.DefaultPlaceholder) {
			t.Fatalf("the summarizer was given a placeholder for %s", r.ID)
		}
	}
	// Nothing volatile: the only paths are those of the workspace's files
	// (the summary's pointers).
	summary := res.Messages[0].Content.Text()
	if s := strings.ReplaceAll(summary, o.WorkspaceDir, "<ws>"); strings.Contains(s, os.TempDir()) || strings.Contains(s, "2026") {
		t.Errorf("volatile summary: %q", summary)
	}
	// The same history in a fresh workspace gives the same bytes, but for
	// the workspace's directory.
	o2 := options(t)
	o2.ClearAtLeast = -1
	o2.Compact = o.Compact
	again := mustPrepare(t, newPipeline(t, o2), all)
	a, _ := agentctx.MarshalMessages(res.Messages)
	b, _ := agentctx.MarshalMessages(again.Messages)
	if !bytes.Equal(bytes.ReplaceAll(a, []byte(o.WorkspaceDir), []byte("<ws>")), bytes.ReplaceAll(b, []byte(o2.WorkspaceDir), []byte("<ws>"))) {
		t.Error("the same history prepared in another workspace differs")
	}
}

// TestArchiveFailureDoesNotCompact: prepare never compacts what it cannot
// archive, and says so.
func TestArchiveFailureDoesNotCompact(t *testing.T) {
	o := options(t)
	o.NoPrune = true
	o.Compact.Limit = 3000
	o.Compact.Archiver = failingArchiver{}
	msgs := longHistory(14)
	res := mustPrepare(t, newPipeline(t, o), msgs)
	c := res.Report.Step(pipeline.StepCompact).Compact
	if c.Compacted || len(res.Messages) != len(msgs) || len(res.Report.Warnings) == 0 || !strings.Contains(res.Report.Warnings[0], "could not be archived") {
		t.Errorf("compact %+v, warnings %q", c, res.Report.Warnings)
	}
}

type failingArchiver struct{}

func (failingArchiver) Archive(context.Context, string, []agentctx.Message) (compact.Archived, error) {
	return compact.Archived{}, &compact.ArchiveError{Op: "write", Path: "/nowhere", Err: os.ErrPermission}
}

// TestSessionsKeepTheirArtifacts: two sessions reuse tool ids with other
// content; they share the namespace, so the second takes a suffixed id,
// and the id each reference names reads back its own content, byte for
// byte, for any reader of the namespace.
func TestSessionsKeepTheirArtifacts(t *testing.T) {
	store := memstore.New()
	sessions := memsession.New()
	contents := map[string]string{"s1": strings.Repeat("first session\n", 4000), "s2": strings.Repeat("second session\n", 4000)}
	named := map[string]string{} // artifact id named in the reference -> content
	for _, id := range []string{"s1", "s2"} {
		o := options(t)
		o.Store, o.Sessions, o.SessionID = store, sessions, id
		res := mustPrepare(t, newPipeline(t, o), history(user("go", now), exchange("toolu_1", "Read", "cat", contents[id], false, now)))
		m := regexp.MustCompile(`<knowledge id="([^"]+)"`).FindStringSubmatch(resultText(res.Messages, "toolu_1"))
		if m == nil {
			t.Fatalf("session %s: no reference", id)
		}
		named[m[1]] = contents[id]
	}
	if len(named) != 2 {
		t.Fatalf("the two sessions' results are named by %d ids, want 2", len(named))
	}
	ws := workspace.New(store, workspace.Options{MaxChars: workspace.NoLimit})
	for id, c := range named {
		got, err := ws.GetKnowledgeByID(context.Background(), id, 0)
		if err != nil || got != c {
			t.Errorf("%s reads back %d bytes, %v", id, len(got), err)
		}
	}
}

// TestReadBackProperty replays random sessions (reused ids, large and
// small results, stale output, compactions): every artifact id named in
// every prepared request reads back the original it stands for.
func TestReadBackProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 6 {
		o := options(t)
		o.Store, o.Sessions = memstore.New(), memsession.New()
		o.Compact.Limit = 8_000 + rng.IntN(8_000)
		o.ClearAtLeast = []int{-1, 500, 5_000}[run%3]
		var clock time.Time
		o.Now = func() time.Time { return clock }
		p := newPipeline(t, o)
		originals := map[string]string{} // artifact id → content
		var msgs []agentctx.Message
		start := now.Add(-4 * time.Hour)
		for turn := range 30 + rng.IntN(20) {
			at := start.Add(time.Duration(turn) * 3 * time.Minute)
			id := fmt.Sprintf("call_%d", rng.IntN(8)) // ids repeat across turns
			size := []int{20, 400, 3_000, 45_000}[rng.IntN(4)]
			out := fmt.Sprintf(`{"stdout":"%s","exitCode":0}`, strings.Repeat(fmt.Sprintf("t%d ", turn), size/4))
			tool := []string{"bash", "Read", "Bash"}[rng.IntN(3)]
			msgs = append(msgs, exchange(id, tool, "run", out, rng.IntN(10) == 0, at)...)
			clock = at.Add(time.Second)
			res := mustPrepare(t, p, msgs)
			for r := range agentctx.ToolResults(res.Messages) {
				text := r.Content.AsText()
				i := strings.Index(text, `artifact_id="tool_result_`)
				if j := strings.Index(text, `<knowledge id="`); j >= 0 && (i < 0 || j < i) {
					i = j + len(`<knowledge id="`) - len(`artifact_id="`)
				}
				if i < 0 {
					continue
				}
				rest := text[i+len(`artifact_id="`):]
				aid := rest[:strings.IndexByte(rest, '"')]
				a, err := p.Workspace().Get(context.Background(), aid)
				if err != nil {
					t.Fatalf("run %d turn %d: %s names %s: %v", run, turn, r.ID, aid, err)
				}
				if prev, ok := originals[aid]; ok && prev != a.Content {
					t.Fatalf("run %d: artifact %s changed", run, aid)
				}
				originals[aid] = a.Content
			}
			// Every reference stands for the result in the same place of
			// the history given.
			for r := range agentctx.ToolResults(res.Messages) {
				text := r.Content.AsText()
				if !strings.Contains(text, `tool_result_`) {
					continue
				}
				found := false
				for _, a := range originals {
					for h := range agentctx.ToolResults(msgs) {
						// Repair renames an id reused in a later turn (a → a_2).
						if (h.ID == r.ID || strings.HasPrefix(r.ID, h.ID+"_")) && h.Content.AsText() == a {
							found = true
						}
					}
				}
				if !found {
					t.Fatalf("run %d turn %d: the reference of %s reads back none of its results", run, turn, r.ID)
				}
			}
		}
	}
}

// TestObserveCalibrates: after usage is fed back, the next request is
// estimated as that usage plus the change, scaled by the fitted ratio.
func TestObserveCalibrates(t *testing.T) {
	o := options(t)
	o.NoCompact = true
	p := newPipeline(t, o)
	msgs := history(user("go", now), exchange("toolu_1", "Read", "cat", strings.Repeat("alpha beta ", 400), false, now))
	r1 := mustPrepare(t, p, msgs)
	if r1.Report.EstimatedTokens != r1.Report.TokensAfter || r1.Report.Session.Calibrated {
		t.Fatalf("uncalibrated estimate %d, count %d", r1.Report.EstimatedTokens, r1.Report.TokensAfter)
	}
	// The provider counts 1.2 tokens per counted token, plus 5,000 for a
	// system prompt we do not see.
	billed := func(counted int) int { return 5_000 + counted*12/10 }
	if err := p.Observe(context.Background(), pricing.Usage{Uncached: 10, CacheRead: billed(r1.Report.TokensAfter) - 10}, 0); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, exchange("toolu_2", "Read", "cat", strings.Repeat("gamma delta ", 600), false, now)...)
	r2 := mustPrepare(t, p, msgs)
	if err := p.Observe(context.Background(), pricing.Usage{Uncached: billed(r2.Report.TokensAfter)}, 0); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, exchange("toolu_3", "Read", "cat", strings.Repeat("epsilon zeta ", 800), false, now)...)
	r3 := mustPrepare(t, p, msgs)
	want := billed(r3.Report.TokensAfter)
	if got := r3.Report.EstimatedTokens; got < want*99/100 || got > want*101/100 || !r3.Report.Session.Calibrated {
		t.Errorf("estimate %d, billed %d", got, want)
	}
}

// TestPrepareDocumentCountsTools: the tool definitions of a request body
// count toward the trigger.
func TestPrepareDocumentCountsTools(t *testing.T) {
	body := `{"system":"Be brief.","tools":[{"name":"bash","description":"` + strings.Repeat("Run a command. ", 100) + `","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`
	doc, err := agentctx.ParseDocument(context.Background(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p := newPipeline(t, options(t))
	res, err := p.PrepareDocument(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.ReservedTokens < 300 {
		t.Errorf("reserved %d tokens: the tools were not counted", res.Report.ReservedTokens)
	}
}

// TestPruneClassesFollowContent: what a result's content says (failed or
// not, command output or not) is remembered between calls by the
// content's digest, never by the call id alone: when the ids of pruned
// results come back with a failed command's output, that output is kept
// whole.
func TestPruneClassesFollowContent(t *testing.T) {
	build := func(exit int) []agentctx.Message {
		var msgs []agentctx.Message
		for i := range 6 {
			out := fmt.Sprintf(`{"stdout":"%s","stderr":"","exitCode":%d}`, strings.Repeat(fmt.Sprintf("step %d ", i), 60), exit)
			msgs = append(msgs, exchange(fmt.Sprintf("toolu_%03d", i), "bash", "make", out, false, now.Add(-time.Hour+time.Duration(i)*time.Minute))...)
		}
		return msgs
	}
	o := options(t)
	o.ClearAtLeast = -1
	o.Now = func() time.Time { return now }
	p := newPipeline(t, o)
	if n := mustPrepare(t, p, build(0)).Report.Step(pipeline.StepPrune).Changed; n == 0 {
		t.Fatal("no stale successful output pruned")
	}
	failed := build(1)
	res := mustPrepare(t, p, failed)
	if n := res.Report.Step(pipeline.StepPrune).Changed; n != 0 {
		t.Fatalf("pruned %d results whose command failed", n)
	}
	if got, want := resultText(res.Messages, "toolu_000"), resultText(failed, "toolu_000"); got != want {
		t.Fatalf("failed output sent as %q", got)
	}
}
