package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// TestWorkspaceBudget: a session over its workspace byte budget sends its
// later large results as they came (not replaced by a reference to an
// artifact that does not exist), with the first one's artifact readable;
// the request goes on without an error, and a later request does the same;
// the report (and its read-back check) lists only what was stored.
func TestWorkspaceBudget(t *testing.T) {
	ctx := context.Background()
	big := func(tag string) agentctx.Content { return agentctx.Text(tag + strings.Repeat("y", 60_000)) }
	store := memstore.New()
	p, err := pipeline.New(pipeline.Options{Store: store, Stateless: true, NoPrune: true, NoCompact: true, Verify: true,
		Workspace: workspace.Options{SessionBytes: 100_000}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("go"))}
	for _, id := range []string{"t1", "t2", "t3"} {
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, "Bash", []byte(`{"command":"ls"}`)))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, big(id), false))))
		res, err := p.Prepare(ctx, msgs)
		if err != nil {
			t.Fatalf("after %s: %v", id, err)
		}
		if !res.Report.Verified() {
			t.Errorf("after %s: the read-back check failed: a result not stored was counted as stored", id)
		}
		for _, st := range res.Report.Steps {
			for _, a := range st.Artifacts {
				if a != workspace.ArtifactID("t1") {
					t.Errorf("after %s: the report lists artifact %q", id, a)
				}
			}
		}
		for r := range agentctx.ToolResults(res.Messages) {
			stored := r.ID == "t1"
			if ref := strings.HasPrefix(r.Content.AsText(), "<knowledge_list>"); ref != stored {
				t.Errorf("after %s: result %s referenced %v, want %v", id, r.ID, ref, stored)
			}
			if !stored && r.Content.AsText() != big(r.ID).AsText() {
				t.Errorf("after %s: result %s changed", id, r.ID)
			}
		}
	}
	if _, err := p.Workspace().Get(ctx, workspace.ArtifactID("t1")); err != nil {
		t.Errorf("the first result: %v", err)
	}
	if _, err := store.Stat(ctx, workspace.DefaultNamespace, workspace.ArtifactID("t2")); err == nil {
		t.Error("t2 stored over the budget")
	}
}
