package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/thinking"
	"github.com/agentctx/agentctx/pipeline"
)

// TestCallOptionsBound: the prune decisions on results before the open
// turn's thinking (CallOptions.Bound) are deferred, not applied nor
// recorded, so those messages go as they came; with EditBound (the caller
// delegates them to the provider) or without a binding they are applied.
func TestCallOptionsBound(t *testing.T) {
	old := now.Add(-time.Hour)
	out := `{"stdout":"` + strings.Repeat("ok ", 400) + `","exitCode":0}`
	parts := []any{user("build it", old)}
	for i := range 6 {
		parts = append(parts, exchange(fmt.Sprintf("toolu_a%d", i), "terminal-execute", "make", out+strings.Repeat(" ", i), false, old))
	}
	open, err := agentctx.DecodeMessage([]byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"next","signature":"sig"},{"type":"tool_use","id":"toolu_b","name":"terminal-execute","input":{"command":"ls"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, open, agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("toolu_b", agentctx.Text("a b"), false))))
	msgs := history(parts...)
	bound := thinking.Bound(msgs)
	if bound != len(msgs)-2 {
		t.Fatalf("Bound = %d, want %d (the open turn's assistant message)", bound, len(msgs)-2)
	}
	for _, c := range []struct {
		name     string
		co       pipeline.CallOptions
		deferred bool
	}{
		{"bound", pipeline.CallOptions{Bound: bound}, true},
		{"edit bound", pipeline.CallOptions{Bound: bound, EditBound: true}, false},
		{"no binding", pipeline.CallOptions{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := options(t)
			o.ClearAtLeast = -1
			p := newPipeline(t, o)
			res, err := p.PrepareCall(context.Background(), &agentctx.Document{Format: agentctx.FormatArray, Messages: msgs}, c.co)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Report.Step(pipeline.StepPrune)
			if s == nil {
				t.Fatal("no prune step")
			}
			want, _ := agentctx.MarshalMessages(agentctx.StripMetadata(msgs[:bound]))
			got, _ := agentctx.MarshalMessages(agentctx.StripMetadata(res.Messages[:min(bound, len(res.Messages))]))
			same := string(want) == string(got)
			if c.deferred && (s.Deferred == 0 || !same) {
				t.Errorf("deferred %d, bound messages unchanged %v; want the decisions deferred and the messages as they came", s.Deferred, same)
			}
			if !c.deferred && (s.Deferred != 0 || same) {
				t.Errorf("deferred %d, bound messages unchanged %v; want the decisions applied", s.Deferred, same)
			}
		})
	}
}
