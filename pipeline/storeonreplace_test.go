package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// With StoreOnReplace, the small results a request keeps whole are not
// written (issue 24: 100,000 artifact files for a request of 50,000 small
// results); the ones pruned are stored before they leave, under the id
// their placeholder names, and the request sent is the same as when every
// result is stored when first seen.
func TestStoreOnReplaceStoresWhatLeaves(t *testing.T) {
	msgs := seed004Example5(t)
	run := func(onReplace bool) (*pipeline.Pipeline, *pipeline.Result, string) {
		o := options(t)
		o.ClearAtLeast = -1 // the seed applies every stale result at once
		o.Verify = true
		o.StoreOnReplace = onReplace
		p := newPipeline(t, o)
		return p, mustPrepare(t, p, msgs), o.WorkspaceDir
	}
	_, every, _ := run(false)
	p, res, dir := run(true)

	a, _ := agentctx.MarshalMessages(every.Messages)
	b, _ := agentctx.MarshalMessages(res.Messages)
	if string(a) != string(b) {
		t.Errorf("the request differs from the one made storing every result:\n%s\n%s", a, b)
	}
	off := res.Report.Step(pipeline.StepOffload).Offload
	if off.Stored != 2 || off.Written != 2 || !off.Verified.OK() || off.Verified.Checked != 2 {
		t.Errorf("offload step: stored %d, written %d, verified %+v; want the 2 pruned results", off.Stored, off.Written, off.Verified)
	}
	ctx := context.Background()
	for r := range agentctx.ToolResults(msgs) {
		got, err := p.Workspace().Get(ctx, workspace.ArtifactID(r.ID))
		switch r.ID {
		case "call_07", "call_08": // pruned: read back by the id the placeholder names
			if !strings.Contains(resultText(res.Messages, r.ID), `artifact_id="`+workspace.ArtifactID(r.ID)+`"`) {
				t.Errorf("%s: the placeholder does not name its artifact: %q", r.ID, resultText(res.Messages, r.ID))
			}
			if err != nil || got.Content != r.Content.AsText() {
				t.Errorf("%s: pruned, and its original reads back as %v / %v", r.ID, got, err)
			}
		default: // sent whole: not written
			if !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("%s: kept whole, and stored (%v)", r.ID, err)
			}
		}
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(path, "tool_result_") {
			files++
		}
		return nil
	})
	if files == 0 || files > 2*2 { // content and description of the 2 pruned results
		t.Errorf("%d artifact files written, want those of the 2 pruned results", files)
	}

	// The next request re-applies the same bytes and writes nothing.
	again := mustPrepare(t, p, msgs)
	c, _ := agentctx.MarshalMessages(again.Messages)
	if string(c) != string(b) {
		t.Errorf("the next request differs:\n%s\n%s", b, c)
	}
	if w := again.Report.Step(pipeline.StepOffload).Offload.Written; w != 0 {
		t.Errorf("the next request wrote %d artifacts", w)
	}
}

// A result StoreOnReplace left unstored and then pruned under an id that
// another result already holds (another session's, on a shared store)
// takes the next suffixed id, and its placeholder names that one.
func TestStoreOnReplaceTakesTheNextIDWhenItsIsTaken(t *testing.T) {
	o := options(t)
	o.ClearAtLeast = -1
	o.StoreOnReplace = true
	o.Prune.KeepRecent = 1
	p := newPipeline(t, o)
	ctx := context.Background()
	ws := p.Workspace()
	if _, err := ws.Store().Create(ctx, ws.Namespace(), workspace.Artifact{Info: workspace.Info{ID: workspace.ArtifactID("toolu_1"), Type: workspace.TypeText}, Content: "another session's output"}); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-time.Hour)
	out := `{"stdout":"` + strings.Repeat("compiling module ok\n", 20) + `","stderr":"","exitCode":0}`
	hist := history(user("build", old),
		exchange("toolu_1", "terminal-execute", "make", out, false, old),
		exchange("toolu_2", "terminal-execute", "make test", out, false, now))
	res := mustPrepare(t, p, hist)
	got := resultText(res.Messages, "toolu_1")
	want := workspace.ArtifactID("toolu_1") + "-2"
	if !strings.Contains(got, `artifact_id="`+want+`"`) {
		t.Fatalf("the pruned result's placeholder %q does not name %s", got, want)
	}
	a, err := ws.Get(ctx, want)
	if err != nil || a.Content != out {
		t.Errorf("%s reads back as %v / %v, want the pruned original", want, a, err)
	}
}

// What a compaction summarizes under StoreOnReplace is readable: the small
// results in its archive, the results its summary points at stored.
func TestStoreOnReplaceCompactionKeepsWhatItSummarizes(t *testing.T) {
	msgs := longHistory(14)
	for i := range 6 { // small results, never pruned (NoPrune)
		msgs = append(msgs, exchange("toolu_small_"+strconv.Itoa(i), "Read", "cat s", fmt.Sprintf("small output %d", i), false, now)...)
	}
	msgs = append(msgs, longHistory(14)[1:]...)
	o := options(t)
	o.NoPrune = true
	o.StoreOnReplace = true
	o.Compact.Limit, o.Compact.Summarizer = 3000, &countingSummarizer{}
	p := newPipeline(t, o)
	res := mustPrepare(t, p, msgs)
	c := res.Report.Step(pipeline.StepCompact).Compact
	if !c.Compacted {
		t.Fatalf("not compacted: %+v", c)
	}
	ctx := context.Background()
	archives, err := p.Workspace().Query(ctx, workspace.Filter{Metadata: workspace.Metadata{workspace.KeyContextType: pipeline.ContextCompactionArchive}})
	if err != nil || len(archives) != 1 {
		t.Fatalf("%d archives (%v), want 1", len(archives), err)
	}
	arch, err := p.Workspace().Get(ctx, archives[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for r := range agentctx.ToolResults(res.Messages) {
		kept[r.ID] = true
	}
	archived := 0
	for r := range agentctx.ToolResults(msgs) {
		if kept[r.ID] {
			continue
		}
		_, err := p.Workspace().Get(ctx, workspace.ArtifactID(r.ID))
		if err == nil {
			continue
		}
		if !strings.Contains(arch.Content, fmt.Sprintf("%q", r.Content.AsText())) {
			t.Errorf("%s was summarized and is neither stored nor in the archive", r.ID)
		}
		archived++
	}
	if archived < 6 {
		t.Fatalf("%d small results summarized unstored, want the 6", archived)
	}
	for _, line := range strings.Split(res.Messages[1].Content.AsText(), "\n") {
		if _, id, ok := strings.Cut(line, `artifact_id="`); ok {
			id, _, _ = strings.Cut(id, `"`)
			if !strings.HasPrefix(id, "tool_result_") {
				continue // the summary's instructions: artifact_id="<id>"
			}
			if _, err := p.Workspace().Get(ctx, id); err != nil {
				t.Errorf("the summary points at %s: %v", id, err)
			}
		}
	}
}

// Without an archive a compaction would lose a small result never stored:
// StoreOnReplace then stores every result when first seen.
func TestStoreOnReplaceWithoutArchiveStoresEvery(t *testing.T) {
	msgs := longHistory(6)
	msgs = append(msgs, exchange("toolu_small", "Read", "cat s", "small output", false, now)...)
	o := options(t)
	o.StoreOnReplace = true
	o.Compact.NoArchive = true
	p := newPipeline(t, o)
	mustPrepare(t, p, msgs)
	if _, err := p.Workspace().Get(context.Background(), workspace.ArtifactID("toolu_small")); err != nil {
		t.Errorf("a small result is not stored with Compact.NoArchive: %v", err)
	}
}
