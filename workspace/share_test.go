package workspace_test

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// A result two sessions share (a resumed or forked conversation sends the
// same call again) is stored once: the second session writes nothing and
// the artifact keeps its first writer, instead of the sessions taking
// turns rewriting it.
func TestSharedResultIsStoredOnce(t *testing.T) {
	store := &countingStore{Store: memstore.New()}
	msgs := anthropic(t, "Bash", `{"command":"ls"}`, agentctx.Text("a.go\nb.go\n"))
	for round := range 2 {
		for _, s := range []string{"s1", "s2"} {
			res, err := workspace.New(store, workspace.Options{SessionID: s, Now: now}).Offload(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Artifacts[0].ID; got != "tool_result_toolu_01" {
				t.Fatalf("round %d, %s: stored as %s, want the shared id", round, s, got)
			}
		}
	}
	if store.puts != 1 {
		t.Fatalf("%d writes for one result shared by two sessions, want 1", store.puts)
	}
	a, err := store.Get(ctx, workspace.DefaultNamespace, "tool_result_toolu_01")
	if err != nil || a.Metadata[workspace.KeySessionID] != "s1" {
		t.Fatalf("the artifact's session is %q (%v), want its first writer s1", a.Metadata[workspace.KeySessionID], err)
	}
}
