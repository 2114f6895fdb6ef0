package loadtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// TestLateUsageChangesNothing covers a race of the proxy: it records the
// usage of an answer (Observe) after the answer reached the client, so the
// client's next request, sent at once (in a fleet, to the other replica),
// may be prepared before that usage is in the session state. The report
// must then name its own request (Observe's counted, which the proxy sets on
// main since b4dfec9; before, it sent 0, "the last Prepare", and the late
// report was fitted to the next request's count, which made the fleet
// load test's prepared requests depend on timing). With the count named,
// the prepared requests are the same whether the usage came in time or
// one request late.
func TestLateUsageChangesNothing(t *testing.T) {
	ctx := t.Context()
	run := func(late bool) [][]byte {
		p, err := pipeline.New(pipeline.Options{
			SessionID: "late",
			Store:     memstore.New(),
			Sessions:  memsession.New(),
			Workspace: workspace.Options{InlineLimit: 8000},
			NoPrune:   true,
			Compact:   compact.Options{Limit: 5000, MaxRetries: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var out [][]byte
		type report struct {
			u       pricing.Usage
			counted int
		}
		var pending *report
		for k := range 14 {
			res, err := p.Prepare(ctx, history(t, k))
			if err != nil {
				t.Fatal(err)
			}
			if late && pending != nil {
				observe(ctx, t, p, pending.u, pending.counted)
			}
			b, err := agentctx.MarshalMessages(res.Messages)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
			// The fake upstream bills a quarter of the bytes it receives;
			// the usage names the count of its own request, as the proxy
			// does, so a late report is not fitted to the wrong one.
			u := report{pricing.Usage{Uncached: len(b) / 4}, res.Report.TokensAfter}
			if late {
				pending = &u
			} else {
				observe(ctx, t, p, u.u, u.counted)
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

func observe(ctx context.Context, t *testing.T, p *pipeline.Pipeline, u pricing.Usage, counted int) {
	t.Helper()
	if err := p.Observe(ctx, u, counted); err != nil {
		t.Fatal(err)
	}
}
