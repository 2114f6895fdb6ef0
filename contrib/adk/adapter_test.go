package agentctxadk_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	agentctxadk "github.com/agentctx/agentctx/contrib/adk"
	"github.com/agentctx/agentctx/pipeline"
)

func bigLog() string {
	var b strings.Builder
	for i := 0; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "INFO batch %d exported\n", i)
	}
	return b.String() + "ERROR export failed: statement timeout\n"
}

// fakeLLM calls read_log, then answers; it records every request's contents.
type fakeLLM struct {
	mu       sync.Mutex
	requests [][]*genai.Content
}

func (f *fakeLLM) Name() string { return "fake" }

func (f *fakeLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	f.mu.Lock()
	f.requests = append(f.requests, req.Contents)
	n := len(f.requests)
	f.mu.Unlock()
	resp := &model.LLMResponse{Content: genai.NewContentFromText("The export timed out.", genai.RoleModel), TurnComplete: true}
	if n == 1 {
		resp = &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{ID: "call_1", Name: "read_log", Args: map[string]any{}}}}}, TurnComplete: true}
	}
	return func(yield func(*model.LLMResponse, error) bool) { yield(resp, nil) }
}

type noArgs struct{}

type logResult struct {
	Result string `json:"result"`
}

func TestBeforeModelCallback(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws"),
		Compact: compact.Options{Dir: filepath.Join(dir, "archive")}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	log := bigLog()
	readLog, err := functiontool.New(functiontool.Config{Name: "read_log", Description: "Read the job's log."},
		func(tool.Context, noArgs) logResult { return logResult{Result: log} })
	if err != nil {
		t.Fatal(err)
	}
	llm := &fakeLLM{}
	var results []*pipeline.Result
	a, err := llmagent.New(llmagent.Config{
		Name: "ops", Description: "ops agent", Instruction: "Investigate failures.",
		Model: llm, Tools: []tool.Tool{readLog},
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{agentctxadk.BeforeModelCallback(p, &agentctxadk.Options{
			OnResult: func(_ context.Context, r *pipeline.Result) { results = append(results, r) }})},
	})
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.InMemoryService()
	if _, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: sessions})
	if err != nil {
		t.Fatal(err)
	}
	var final, stored string
	for ev, err := range r.Run(ctx, "u", "s1", genai.NewContentFromText("Why did the export fail?", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Content == nil {
			continue
		}
		for _, part := range ev.Content.Parts {
			if part.FunctionResponse != nil {
				stored, _ = part.FunctionResponse.Response["result"].(string)
			}
			if part.Text != "" {
				final = part.Text
			}
		}
	}
	if final != "The export timed out." || len(llm.requests) != 2 || len(results) != 2 {
		t.Fatalf("final %q after %d model calls, %d preparations", final, len(llm.requests), len(results))
	}
	// The model was sent a reference; the session kept the log.
	second := llm.requests[1]
	var sent *genai.FunctionResponse
	for _, c := range second {
		for _, part := range c.Parts {
			if part.FunctionResponse != nil {
				sent = part.FunctionResponse
			}
		}
	}
	text, _ := sent.Response["result"].(string)
	if sent.ID != "call_1" || !strings.Contains(text, "<knowledge_list>") || strings.Contains(text, "INFO batch 100 exported") {
		t.Errorf("the model was sent %.300q", text)
	}
	if stored != log {
		t.Errorf("the session's function response changed: %d characters", len(stored))
	}
	id := regexp.MustCompile(`<knowledge id="([^"]+)"`).FindStringSubmatch(text)
	if a, err := p.Workspace().Get(ctx, id[1]); err != nil || a.Content != log {
		t.Errorf("read back: %v", err)
	}
}

// TestMessagesWithoutIDs pairs calls and responses that carry no id.
func TestMessagesWithoutIDs(t *testing.T) {
	in := []*genai.Content{
		genai.NewContentFromText("go", genai.RoleUser),
		{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: "ls"}}, {FunctionCall: &genai.FunctionCall{Name: "ls", Args: map[string]any{"p": "/"}}}}},
		{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Name: "ls", Response: map[string]any{"output": "a"}}},
			{FunctionResponse: &genai.FunctionResponse{Name: "ls", Response: map[string]any{"n": 2.0, "files": []any{"x"}}}}}},
	}
	msgs, _ := agentctxadk.Messages(in)
	if rep := agentctx.ValidatePairing(msgs); !rep.Valid {
		t.Errorf("unpaired: %+v", rep)
	}
	b, _ := agentctx.MarshalMessages(msgs)
	want := `[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"tool_use","id":"adk_call_1_0","name":"ls","input":{}},{"type":"tool_use","id":"adk_call_1_1","name":"ls","input":{"p":"/"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"adk_call_1_0","content":"a"},{"type":"tool_result","tool_use_id":"adk_call_1_1","content":"{\"files\":[\"x\"],\"n\":2}"}]}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

type failing struct{}

func (failing) Prepare(context.Context, []agentctx.Message) (*pipeline.Result, error) {
	return nil, fmt.Errorf("store is down")
}

func TestFailure(t *testing.T) {
	in := []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}
	if _, _, err := agentctxadk.PrepareContents(t.Context(), failing{}, in); err == nil || !strings.Contains(err.Error(), "store is down") {
		t.Errorf("error %v", err)
	}
}
