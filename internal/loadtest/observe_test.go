package loadtest

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// TestLateUsageChangesPreparedRequest reproduces a race of the proxy: it
// records the usage of an answer (Observe) after the answer reached the
// client, so the client's next request, sent at once (in a fleet, to the
// other replica), may be prepared before that usage is in the session
// state. Observe then calibrates the usage of request k against the count
// of request k+1 (Usage.Counted is 0: "the last Prepare"). The prepared
// requests then depend on timing: the same session, prepared by two
// replicas, can differ byte for byte.
//
// Skipped unless AGENTCTX_LOADTEST_BUGS is set.
func TestLateUsageChangesPreparedRequest(t *testing.T) {
	if os.Getenv(EnvShowBugs) == "" {
		t.Skip("known race: usage observed after the next request was prepared; set " + EnvShowBugs + "=1 to run")
	}
	ctx := t.Context()
	run := func(late bool) [][]byte {
		p, err := pipeline.New(pipeline.Options{
			SessionID: "late",
			Store:     memstore.New(),
			Sessions:  session.NewMemStore(),
			Workspace: workspace.Options{InlineLimit: 8000},
			NoPrune:   true,
			Compact:   compact.Options{Limit: 5000, MaxRetries: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var out [][]byte
		var pending *pipeline.Usage
		for k := range 14 {
			res, err := p.Prepare(ctx, history(t, k))
			if err != nil {
				t.Fatal(err)
			}
			if late && pending != nil {
				observe(ctx, t, p, *pending)
			}
			b, err := agentctx.MarshalMessages(res.Messages)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
			// The fake upstream bills a quarter of the bytes it receives.
			u := pipeline.Usage{InputTokens: len(b) / 4}
			if late {
				pending = &u
			} else {
				observe(ctx, t, p, u)
			}
		}
		return out
	}
	onTime, late := run(false), run(true)
	for k := range onTime {
		if !bytes.Equal(onTime[k], late[k]) {
			t.Errorf("request %d: %d bytes prepared when the usage before it was recorded in time, %d bytes when it came late", k, len(onTime[k]), len(late[k]))
		}
	}
}

func observe(ctx context.Context, t *testing.T, p *pipeline.Pipeline, u pipeline.Usage) {
	t.Helper()
	if err := p.Observe(ctx, u); err != nil {
		t.Fatal(err)
	}
}
