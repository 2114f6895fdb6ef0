package anthropicx_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// documentOnly hides the pipeline's PrepareCall: the middleware cannot
// tell it what the request's thinking binds (the behaviour before issue
// 23).
type documentOnly struct{ p *pipeline.Pipeline }

func (d documentOnly) PrepareDocument(ctx context.Context, doc *agentctx.Document) (*pipeline.Result, error) {
	return d.p.PrepareDocument(ctx, doc)
}

// thinkingLoop runs an agent loop on anthropic-sdk-go, thinking on, one
// open turn of tool rounds, through the middleware, against the fake API
// with its preserved-thinking prefix check (a changed prefix before a
// signed block is a 400, as no drop_block is asked for). It returns the
// fake's bill, the reports and the loop's error.
func thinkingLoop(t *testing.T, bind, native bool) (fakeupstream.Bill, []pipeline.Report, error) {
	const steps = 12
	var mu sync.Mutex
	step := 0
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		mu.Lock()
		defer mu.Unlock()
		if step == steps {
			return fakeupstream.Reply{Thinking: "All steps ran.", Text: "done"}
		}
		step++
		return fakeupstream.Reply{Thinking: fmt.Sprintf("Step %d comes next.", step), Text: fmt.Sprintf("Running step %d.", step),
			ToolCalls: []fakeupstream.ToolCall{{Name: "bash", Input: map[string]any{"command": fmt.Sprintf("step %d", step)}}}}
	}})
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)

	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{
		SessionID:    "s1",
		WorkspaceDir: filepath.Join(dir, "ws"),
		Workspace:    workspace.Options{InlineLimit: 8000},
		Prune:        prune.Options{MaxAge: time.Millisecond, KeepRecent: 1, ToolNames: []string{"bash"}},
		ClearAtLeast: 1000,
		Compact:      compact.Options{Limit: 8_000, Dir: filepath.Join(dir, "archive")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var prep anthropicx.Preparer = p
	if !bind {
		prep = documentOnly{p}
	}
	var reports []pipeline.Report
	mwOpts := anthropicx.Options{OnResult: func(_ context.Context, r *pipeline.Result) {
		reports = append(reports, r.Report)
	}}
	mw := anthropicx.WithPipelineOptions(prep, mwOpts)
	if native {
		mw = anthropicx.WithPipelineNative(prep, mwOpts)
	}
	c := anthropic.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test"), option.WithMaxRetries(0), mw)
	params := anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 4096,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "bash", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Run the steps."))},
	}
	for turn := 0; turn <= steps; turn++ {
		msg, err := c.Messages.New(t.Context(), params)
		if err != nil {
			return fake.Bill(), reports, err
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			if u, ok := block.AsAny().(anthropic.ToolUseBlock); ok {
				// Large outputs (offloaded) alternate with middling ones
				// (kept whole, then stale).
				lines := 600
				if turn%2 == 1 {
					lines = 150
				}
				var out strings.Builder
				for i := range lines {
					fmt.Fprintf(&out, "%d step-%d-padding-padding-padding\n", i, turn)
				}
				fmt.Fprintf(&out, "RESULT=%d\n", turn)
				results = append(results, anthropic.NewToolResultBlock(u.ID, out.String(), false))
			}
		}
		if len(results) == 0 {
			break
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	return fake.Bill(), reports, nil
}

// TestThinkingLoop is issue 23's proof for the SDK: an anthropic-sdk-go
// loop through anthropicx with signed thinking sends no thinking block the
// API judges invalid, without drop_block, while the pipeline still
// offloads, defers its prune decisions and compacts.
func TestThinkingLoop(t *testing.T) {
	bill, reports, err := thinkingLoop(t, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var deferred, compactions int
	for _, r := range reports {
		if s := r.Step(pipeline.StepPrune); s != nil {
			deferred += s.Deferred
		}
		if s := r.Step(pipeline.StepCompact); s != nil && s.Compact != nil && s.Compact.Compacted {
			compactions++
		}
	}
	t.Logf("requests %d, rejections %d, thinking blocks %d, invalid %d, drop_block %d; deferred %d, compactions %d",
		bill.Requests, bill.Rejections, bill.ThinkingBlocks, bill.InvalidThinking, bill.DropBlockRequests, deferred, compactions)
	if bill.Rejections != 0 || bill.InvalidThinking != 0 || bill.DropBlockRequests != 0 {
		t.Errorf("%d rejections, %d invalid thinking blocks, %d drop_block requests; want none", bill.Rejections, bill.InvalidThinking, bill.DropBlockRequests)
	}
	if deferred == 0 || compactions == 0 {
		t.Errorf("deferred %d, compactions %d: the loop did not exercise the binding", deferred, compactions)
	}

	// Without the binding (a Preparer that is not a CallPreparer), the
	// same loop edits a result before the open turn's thinking, and the
	// API rejects the request.
	if _, _, err := thinkingLoop(t, false, false); err == nil || !strings.Contains(err.Error(), "prefix binding") {
		t.Errorf("without the binding: %v; want the prefix check's 400", err)
	}
}

// TestThinkingAcrossEndedTurns is the SDK half of issue 23's proof for
// ended turns: an anthropic-sdk-go loop of several user prompts, each a
// tool loop with signed thinking, through anthropicx, while the pipeline
// prunes and offloads the results of ended turns (before their thinking)
// and compacts. The middleware removes the thinking an edit invalidated
// (internal/lib/thinking.Fix, as the proxy does): no request is rejected, no
// invalid block is sent, and no drop_block is needed.
func TestThinkingAcrossEndedTurns(t *testing.T) {
	const turns, rounds = 4, 4
	var mu sync.Mutex
	round, turn := 0, 0
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		mu.Lock()
		defer mu.Unlock()
		if round == rounds {
			round = 0
			turn++
			return fakeupstream.Reply{Thinking: fmt.Sprintf("Turn %d is done.", turn), Text: "done"}
		}
		round++
		return fakeupstream.Reply{Thinking: fmt.Sprintf("Turn %d, round %d.", turn, round), Text: "Running.",
			ToolCalls: []fakeupstream.ToolCall{{Name: "bash", Input: map[string]any{"command": fmt.Sprintf("t%d r%d", turn, round)}}}}
	}})
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{
		SessionID:    "s1",
		WorkspaceDir: filepath.Join(dir, "ws"),
		Workspace:    workspace.Options{InlineLimit: 8000},
		Prune:        prune.Options{MaxAge: time.Millisecond, KeepRecent: 1, ToolNames: []string{"bash"}},
		Clearing:     pipeline.ClearBatched, // edits at known points: this test is about the thinking they invalidate
		ClearAtLeast: 1000,
		Compact:      compact.Options{Limit: 12_000, Dir: filepath.Join(dir, "archive")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var pruned, compactions int
	c := anthropic.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test"), option.WithMaxRetries(0),
		anthropicx.WithPipelineOptions(p, anthropicx.Options{OnResult: func(_ context.Context, r *pipeline.Result) {
			if s := r.Report.Step(pipeline.StepPrune); s != nil {
				pruned += s.New
			}
			if s := r.Report.Step(pipeline.StepCompact); s != nil && s.Compact != nil && s.Compact.Compacted {
				compactions++
			}
		}}))
	params := anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 4096,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "bash", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Prompt 0."))},
	}
	prompts := 1
	for req := 0; req < turns*(rounds+1); req++ {
		msg, err := c.Messages.New(t.Context(), params)
		if err != nil {
			t.Fatalf("request %d: %v", req, err)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			if u, ok := block.AsAny().(anthropic.ToolUseBlock); ok {
				var out strings.Builder
				for i := range 150 + 450*(req%2) {
					fmt.Fprintf(&out, "%d request-%d-padding-padding-padding\n", i, req)
				}
				results = append(results, anthropic.NewToolResultBlock(u.ID, out.String(), false))
			}
		}
		if len(results) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
			continue
		}
		if prompts == turns {
			break
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("Prompt %d.", prompts))))
		prompts++
	}
	bill := fake.Bill()
	t.Logf("requests %d, rejections %d, thinking blocks %d, invalid %d, drop_block %d; pruned %d, compactions %d",
		bill.Requests, bill.Rejections, bill.ThinkingBlocks, bill.InvalidThinking, bill.DropBlockRequests, pruned, compactions)
	if bill.Rejections != 0 || bill.InvalidThinking != 0 || bill.DropBlockRequests != 0 {
		t.Errorf("%d rejections, %d invalid thinking blocks, %d drop_block requests; want none", bill.Rejections, bill.InvalidThinking, bill.DropBlockRequests)
	}
	if pruned == 0 || bill.ThinkingBlocks == 0 {
		t.Errorf("pruned %d, thinking blocks sent %d: the loop did not edit before kept thinking", pruned, bill.ThinkingBlocks)
	}
}

// TestThinkingLoopNative: the same loop through NativeMiddleware delegates
// the decisions on results before the open turn's thinking to Anthropic's
// context editing (applied by the fake after its prefix check): no
// rejection, no invalid block, no drop_block, results cleared
// server-side, and every thinking block of the open turn kept.
func TestThinkingLoopNative(t *testing.T) {
	bill, reports, err := thinkingLoop(t, true, true)
	if err != nil {
		t.Fatal(err)
	}
	var deferred, compactions int
	for _, r := range reports {
		if s := r.Step(pipeline.StepPrune); s != nil {
			deferred += s.Deferred
		}
		if s := r.Step(pipeline.StepCompact); s != nil && s.Compact != nil && s.Compact.Compacted {
			compactions++
		}
	}
	t.Logf("requests %d, rejections %d, thinking blocks %d, invalid %d, drop_block %d; context edits %d, cleared tool uses %d, deferred %d, compactions %d",
		bill.Requests, bill.Rejections, bill.ThinkingBlocks, bill.InvalidThinking, bill.DropBlockRequests, bill.ContextEdits, bill.ClearedToolUses, deferred, compactions)
	if bill.Rejections != 0 || bill.InvalidThinking != 0 || bill.DropBlockRequests != 0 {
		t.Errorf("%d rejections, %d invalid thinking blocks, %d drop_block requests; want none", bill.Rejections, bill.InvalidThinking, bill.DropBlockRequests)
	}
	if bill.ContextEdits == 0 || bill.ClearedToolUses == 0 || deferred != 0 {
		t.Errorf("context edits %d, cleared %d, deferred %d: want the decisions delegated, none deferred", bill.ContextEdits, bill.ClearedToolUses, deferred)
	}
}
