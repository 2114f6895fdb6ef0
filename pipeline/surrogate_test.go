package pipeline_test

import (
	"context"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/workspace"
)

// A result whose string holds a lone surrogate escape is stored as sent
// (the proxy stores through the pipeline): the artifact gives back the
// JSON string byte for byte, not U+FFFD (issue 49).
func TestStoredLoneSurrogateAsSent(t *testing.T) {
	const sent = `"out \ud800 put"`
	msgs, err := agentctx.UnmarshalMessages([]byte(`[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + sent + `}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	p := newPipeline(t, options(t))
	mustPrepare(t, p, msgs)
	a, err := p.Workspace().Get(context.Background(), workspace.ArtifactID("toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := workspace.SentJSON(a); !ok || string(got) != sent {
		t.Errorf("stored %q (%v), metadata %v; want %q as sent", got, ok, a.Metadata, sent)
	}
}
