package anthropicx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// TestThinkingLoopNativeCompaction: an anthropic-sdk-go loop (the beta
// Messages API, whose blocks round-trip a compaction block) through
// NativeMiddleware, thinking on, one open turn of tool rounds whose
// results stay whole until the pipeline compacts at 60,000 tokens. The
// compaction is asked of the API (compact_20260112, the pipeline's
// pointers in its instructions), which summarizes after its prefix check;
// the requests after it declare the edit and carry the block: no
// rejection, no invalid thinking block, no drop_block.
func TestThinkingLoopNativeCompaction(t *testing.T) {
	const steps = 24
	step := 0
	fake := fakeupstream.New(fakeupstream.Options{ContextWindow: 200_000, Script: func(c *fakeupstream.Call) fakeupstream.Reply {
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
		Workspace:    workspace.Options{InlineLimit: 100_000},
		Compact:      compact.Options{Limit: 60_000, Dir: filepath.Join(dir, "archive")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	compactions := 0
	mw := anthropicx.WithPipelineNative(p, anthropicx.Options{OnResult: func(_ context.Context, r *pipeline.Result) {
		if s := r.Report.Step(pipeline.StepCompact); s != nil && s.Compact != nil && s.Compact.Compacted {
			compactions++
		}
	}})
	c := anthropic.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test"), option.WithMaxRetries(0), mw)
	params := anthropic.BetaMessageNewParams{
		Model: "claude-test", MaxTokens: 4096,
		Thinking: anthropic.BetaThinkingConfigParamOfEnabled(1024),
		Tools:    []anthropic.BetaToolUnionParam{{OfTool: &anthropic.BetaToolParam{Name: "bash", InputSchema: anthropic.BetaToolInputSchemaParam{Properties: map[string]any{}}}}},
		Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Run the steps."))},
	}
	for turn := 0; turn <= steps; turn++ {
		msg, err := c.Beta.Messages.New(t.Context(), params)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.BetaContentBlockParamUnion
		for _, block := range msg.Content {
			if u, ok := block.AsAny().(anthropic.BetaToolUseBlock); ok {
				out := strings.Repeat(fmt.Sprintf("step %d output line, words words words\n", turn), 400)
				results = append(results, anthropic.NewBetaToolResultBlock(u.ID, out, false))
			}
		}
		if len(results) == 0 {
			break
		}
		params.Messages = append(params.Messages, anthropic.NewBetaUserMessage(results...))
	}
	bill := fake.Bill()
	asked, declared := 0, 0
	for _, r := range fake.Records() {
		var b struct {
			CM struct {
				Edits []map[string]any `json:"edits"`
			} `json:"context_management"`
		}
		json.Unmarshal(r.Body, &b)
		for _, e := range b.CM.Edits {
			if e["type"] != ctxedit.Compact {
				continue
			}
			if e["instructions"] != nil && strings.Contains(e["instructions"].(string), "## "+compact.PointersTitle) {
				asked++
			} else {
				declared++
			}
		}
	}
	t.Logf("requests %d, rejections %d, thinking blocks %d, invalid %d, drop_block %d; compactions: pipeline %d, asked %d, by the API %d; edit declared on %d requests",
		bill.Requests, bill.Rejections, bill.ThinkingBlocks, bill.InvalidThinking, bill.DropBlockRequests, compactions, asked, bill.Compactions, declared)
	if bill.Rejections != 0 || bill.InvalidThinking != 0 || bill.DropBlockRequests != 0 {
		t.Errorf("%d rejections, %d invalid thinking blocks, %d drop_block requests; want none", bill.Rejections, bill.InvalidThinking, bill.DropBlockRequests)
	}
	if bill.Compactions == 0 || asked != bill.Compactions || compactions < asked || declared == 0 {
		t.Errorf("compactions: pipeline %d, asked %d, by the API %d, declared after on %d requests", compactions, asked, bill.Compactions, declared)
	}
}
