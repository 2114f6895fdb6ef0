package anthropicx_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// TestReadBackByID is issue 21's read-back with an anthropic-sdk-go loop
// through anthropicx (the pipeline with its defaults, the read-back tools
// declared): against the strict fake upstream, the scripted model
// (fakeupstream.ReadBack) runs a bash tool whose output is 62,000
// characters with a token in the middle, then reads it back with
// get_knowledge_by_id using the artifact id it finds in the reference,
// paging on until the token appears. Each page must reach the model whole
// (not as another reference), and the final answer must carry the token.
func TestReadBackByID(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{
		SessionID:    "s1",
		WorkspaceDir: filepath.Join(dir, "ws"),
		Compact:      compact.Options{Dir: filepath.Join(dir, "archive")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	const token = "tok_anthropicx5eed"
	payload := fakeupstream.ReadBackPayload(token, 62_000)
	offers := func(c *fakeupstream.Call, name string) bool {
		for _, n := range c.ToolNames {
			if n == name {
				return true
			}
		}
		return false
	}
	model := fakeupstream.NewReadBack(fakeupstream.ReadBackOptions{
		Mode: fakeupstream.ByID,
		Produce: func(c *fakeupstream.Call) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "bash", Input: map[string]any{"command": "cat big.txt"}}, offers(c, "bash")
		},
		Fillers: 1,
		Filler: func(c *fakeupstream.Call, i int) (fakeupstream.ToolCall, bool) {
			return fakeupstream.ToolCall{Name: "bash", Input: map[string]any{"command": fmt.Sprintf("echo filler %d", i)}}, true
		},
		ReadID: func(c *fakeupstream.Call, id string, offset int) (fakeupstream.ToolCall, bool) {
			in := map[string]any{"artifact_id": id}
			if offset > 0 {
				in["offset"] = offset
			}
			return fakeupstream.ToolCall{Name: workspace.ToolGetKnowledgeByID, Input: in}, offers(c, workspace.ToolGetKnowledgeByID)
		},
	})
	fake := fakeupstream.New(fakeupstream.Options{Script: model.Script})
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	c := anthropic.NewClient(option.WithBaseURL(up.URL), option.WithAPIKey("test"), option.WithMaxRetries(0), anthropicx.WithPipeline(p))

	params := anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024,
		Tools: append([]anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "bash",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"command": map[string]any{"type": "string"}}}}}},
			anthropicx.Tools(p.Workspace())...),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(
			"Print big.txt, run the filler step, then find SECRET_TOKEN in it again and report it as TOKEN=<value>."))},
	}
	var (
		final string
		pages []string // what get_knowledge_by_id returned to the loop
	)
	for turn := 0; turn < 12; turn++ {
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			t.Fatalf("turn %d: %v\nthe model's report:\n%s", turn, err, model.Report())
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			switch b := block.AsAny().(type) {
			case anthropic.TextBlock:
				final = b.Text
			case anthropic.ToolUseBlock:
				if res, handled := anthropicx.ExecuteTool(ctx, p.Workspace(), b); handled {
					pages = append(pages, res.OfToolResult.Content[0].OfText.Text)
					results = append(results, res)
					continue
				}
				out := "filler ok"
				if strings.Contains(string(b.Input), "big.txt") {
					out = payload
				}
				results = append(results, anthropic.NewToolResultBlock(b.ID, out, false))
			}
		}
		if len(results) == 0 {
			break
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	for _, r := range fake.Records() {
		if r.Rejected != "" {
			t.Errorf("the upstream rejected a request: %s", r.Rejected)
		}
	}

	reads := model.Reads()
	t.Logf("%d read attempts; the final answer %q", len(reads), final)
	if leak := model.Leaked(); leak != "" {
		t.Fatalf("the large result was not replaced by a reference: %s", leak)
	}
	if early := model.Early(); !strings.HasPrefix(early, "<knowledge_list>") {
		t.Fatalf("the large result reached the model as %d characters that are not a reference\nthe model's report:\n%s", len(early), model.Report())
	}
	// Every page the read-back tool returned reached the model whole.
	for i, r := range reads {
		if i >= len(pages) {
			break
		}
		if r.Result != pages[i] {
			what := "other text"
			if r.Reference {
				what = "a new <knowledge_list> reference"
			}
			t.Errorf("read %d: get_knowledge_by_id returned %d characters (the token in them: %v), but the model received %d characters, %s:\n%.400s",
				i+1, len(pages[i]), strings.Contains(pages[i], token), len(r.Result), what, r.Result)
		}
	}
	if want := "TOKEN=" + token; final != want || model.Answer() != want {
		t.Errorf("the final answer is %q, want %q after %d read attempts\nthe model's report:\n%s", final, want, len(reads), model.Report())
	}
}
