package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// Every offload mode keeps what it removes: with --offload files or none a
// pruned result's original is stored too, and its placeholder names it
// (issue 21: those modes left a bare placeholder, the output stored
// nowhere).
func TestEveryModeStoresPrunedOriginals(t *testing.T) {
	for _, mode := range []pipeline.OffloadMode{pipeline.OffloadWorkspace, pipeline.OffloadFiles, pipeline.OffloadNone} {
		t.Run(string(mode), func(t *testing.T) {
			o := options(t)
			o.Offload = mode
			o.ClearAtLeast = -1 // every stale result at once
			p := newPipeline(t, o)
			old := now.Add(-time.Hour)
			out := `{"stdout":"` + strings.Repeat("ok ", 400) + `","exitCode":0}`
			var parts []any
			parts = append(parts, user("build it", old))
			for i, id := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
				parts = append(parts, exchange("toolu_"+id, "terminal-execute", "make", out+strings.Repeat(" ", i), false, old))
			}
			res, err := prepare(t, p, history(parts...))
			if err != nil {
				t.Fatal(err)
			}
			got := resultText(res.Messages, "toolu_a1")
			const call = workspace.ToolGetKnowledgeByID + `(artifact_id="`
			i := strings.Index(got, call)
			if !strings.HasPrefix(got, "此命令返回内容已过时") || i < 0 {
				t.Fatalf("the pruned result does not name its original: %q", got)
			}
			id := got[i+len(call):]
			id = id[:strings.IndexByte(id, '"')]
			a, err := p.Workspace().Get(context.Background(), id)
			if err != nil {
				t.Fatalf("the named original %s: %v", id, err)
			}
			if a.Content != out {
				t.Fatalf("the stored original differs: %.80q", a.Content)
			}
			if mode != pipeline.OffloadWorkspace && strings.Contains(agentctxText(res.Messages), "<knowledge_list>") {
				t.Fatal("a mode other than workspace replaced a result by a workspace reference")
			}
		})
	}
}

func agentctxText(msgs []agentctx.Message) string {
	b, _ := agentctx.MarshalMessages(msgs)
	return string(b)
}
