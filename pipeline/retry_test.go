package pipeline_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/prune"
)

// TestShorterRequestGetsItsOwnDecisions (issue 24, item 1): a request sent
// after a longer one of its session (a retry, a regenerate, a second
// client) is prepared from its own messages: the longer history's prune
// decisions apply to its results only where prune finds them stale in it,
// so its recent results and the one it ends with are sent as it holds
// them; its report counts every change it makes (the proxy forwards the
// original body when none is counted); and the session's state stays the
// longer history's: its next request is prepared as if the shorter one had
// never come.
func TestShorterRequestGetsItsOwnDecisions(t *testing.T) {
	const turns, short, keep = 7, 3, 2
	h := []agentctx.Message{user("Find why the build fails and fix it.", now.Add(-time.Hour))}
	for i := range turns {
		out := strings.Repeat(fmt.Sprintf("pkg%d/x.go:%d: check failed\n", i, i), 20)
		h = append(h, exchange(fmt.Sprintf("toolu_%02d", i), "Bash", fmt.Sprintf("go test ./pkg%d", i), out, false, now.Add(time.Duration(i-turns)*time.Minute))...)
	}
	req := func(k int) []agentctx.Message { return h[: 1+2*k : 1+2*k] } // the task and k turns
	opts := func() pipeline.Options {
		o := options(t) // a workspace and session store of its own
		o.NoCompact = true
		o.Prune = prune.Options{MaxAge: -1, KeepRecent: keep}
		o.ClearAtLeast = -1 // every stale result pruned as soon as it is stale
		return o
	}
	// ref walks the session in order; p also gets the shorter request
	// after the longest.
	ref, p := newPipeline(t, opts()), newPipeline(t, opts())
	for k := 1; k < turns; k++ {
		mustPrepare(t, ref, req(k))
		mustPrepare(t, p, req(k))
	}

	in := req(short)
	res := mustPrepare(t, p, in)
	changed, differ := 0, 0
	for _, s := range res.Report.Steps {
		changed += s.Changed
	}
	for i := range short {
		id := fmt.Sprintf("toolu_%02d", i)
		got, want := resultText(res.Messages, id), resultText(in, id)
		if got != want {
			differ++
		}
		if i >= short-keep && got != want {
			t.Errorf("the shorter request's result %s, among its %d most recent, is sent as %.80q", id, keep, got)
		}
	}
	if differ != changed {
		t.Errorf("the shorter request: %d result(s) sent otherwise than received, the report counts %d change(s)", differ, changed)
	}
	if differ == 0 {
		t.Errorf("the shorter request's own stale result is not pruned: the longer history's decision on it applies")
	}

	// The longer history goes on: the same bytes, flags and counts as
	// without the shorter request.
	want := mustPrepare(t, ref, req(turns))
	got := mustPrepare(t, p, req(turns))
	for i := range want.Messages {
		if i >= len(got.Messages) || !sameMessage(got.Messages[i], want.Messages[i]) {
			t.Fatalf("after the shorter request, the longer history's next request differs from message %d", i)
		}
	}
	if a, b := got.Report.Session.PrefixChanged, want.Report.Session.PrefixChanged; a != b {
		t.Errorf("after the shorter request, the longer history's next request claims a prefix change %v, want %v", a, b)
	}
	if a, b := got.Report.Step(pipeline.StepPrune).New, want.Report.Step(pipeline.StepPrune).New; a != b {
		t.Errorf("after the shorter request, the longer history's next request prunes %d new result(s), want %d", a, b)
	}
}

// TestShorterRequestKeepsItsRecentResultsFromTheSweep: the cold-cache
// sweep of a longer request replaced its older results by references,
// keeping its most recent ones whole; a shorter request sent after it,
// whose most recent results those older ones are, gets them whole (the
// sweep would keep them for it), and the longer history's next request
// still sends the references, byte for byte.
func TestShorterRequestKeepsItsRecentResultsFromTheSweep(t *testing.T) {
	o := options(t)
	clock := now
	o.Now = func() time.Time { return clock }
	p := newPipeline(t, o)
	file := strings.Repeat("a line of the file\n", 600) // 11,400 characters: kept whole
	hist := history(user("read them", clock))
	for i := range 8 {
		clock = clock.Add(time.Minute)
		hist = append(hist, exchange(fmt.Sprint("toolu_", i), "Read", fmt.Sprintf("f%d.go", i), file+fmt.Sprint(i), false, clock)...)
		mustPrepare(t, p, hist)
	}
	clock = clock.Add(20 * time.Minute) // the cache expired
	long := mustPrepare(t, p, hist)
	if got := resultText(long.Messages, "toolu_0"); !strings.HasPrefix(got, "<knowledge_list>") {
		t.Fatalf("cold: the oldest result was not swept: %.80q", got)
	}

	clock = clock.Add(time.Minute)
	short := hist[:1+2*3] // its three results are all among its most recent
	res := mustPrepare(t, p, short)
	changed := 0
	for _, s := range res.Report.Steps {
		changed += s.Changed
	}
	for i := range 3 {
		if got, want := resultText(res.Messages, fmt.Sprint("toolu_", i)), file+fmt.Sprint(i); got != want {
			t.Errorf("the shorter request's recent result toolu_%d is sent as %.80q", i, got)
		}
	}
	if changed != 0 {
		t.Errorf("the shorter request is sent as received, but its report counts %d change(s)", changed)
	}

	clock = clock.Add(time.Minute)
	again := mustPrepare(t, p, hist)
	for i := range long.Messages {
		if i >= len(again.Messages) || !sameMessage(again.Messages[i], long.Messages[i]) {
			t.Fatalf("after the shorter request, the longer history is sent otherwise from message %d", i)
		}
	}
	if again.Report.Session.PrefixChanged {
		t.Error("after the shorter request, the longer history claims a prefix change")
	}
}
