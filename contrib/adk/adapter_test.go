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
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{agentctxadk.BeforeModelCallback(p, agentctxadk.Options{
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

func (failing) PrepareDocument(context.Context, *agentctx.Document) (*pipeline.Result, error) {
	return nil, fmt.Errorf("store is down")
}

func TestFailure(t *testing.T) {
	in := []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}
	if _, _, err := agentctxadk.PrepareContents(t.Context(), failing{}, in, nil); err == nil || !strings.Contains(err.Error(), "store is down") {
		t.Errorf("error %v", err)
	}
}

func newPipeline(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws"),
		Compact: compact.Options{Dir: filepath.Join(dir, "archive")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// agentConfig is the configuration of the agents of the tests: the model,
// the tools and the callbacks over p.
type agentConfig struct {
	llm         model.LLM
	tools       []tool.Tool
	instruction string
	after       bool // register the AfterModelCallback too
}

// runAgent runs an llmagent with the callbacks over p on one question and
// returns the results of its preparations.
func runAgent(t *testing.T, p *pipeline.Pipeline, c agentConfig) []*pipeline.Result {
	t.Helper()
	ctx := t.Context()
	var results []*pipeline.Result
	opts := agentctxadk.Options{OnResult: func(_ context.Context, r *pipeline.Result) { results = append(results, r) }}
	cfg := llmagent.Config{
		Name: "ops", Description: "ops agent", Instruction: c.instruction, Model: c.llm, Tools: c.tools,
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{agentctxadk.BeforeModelCallback(p, opts)},
	}
	if c.after {
		cfg.AfterModelCallbacks = []llmagent.AfterModelCallback{agentctxadk.AfterModelCallback(p, opts)}
	}
	a, err := llmagent.New(cfg)
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
	for _, err := range r.Run(ctx, "u", "s1", genai.NewContentFromText("Why did the export fail?", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	return results
}

func readLogTool(t *testing.T, log string) tool.Tool {
	t.Helper()
	readLog, err := functiontool.New(functiontool.Config{Name: "read_log", Description: "Read the job's log."},
		func(tool.Context, noArgs) logResult { return logResult{Result: log} })
	if err != nil {
		t.Fatal(err)
	}
	return readLog
}

type deployArgs struct {
	Env string `json:"env"`
}

// deployTool has 5.7 KB of declaration, as the read-back tools do.
func deployTool(t *testing.T) tool.Tool {
	t.Helper()
	deploy, err := functiontool.New(functiontool.Config{Name: "deploy", Description: strings.Repeat("Deploy the service to the named environment and wait. ", 100)},
		func(tool.Context, deployArgs) logResult { return logResult{Result: "ok"} })
	if err != nil {
		t.Fatal(err)
	}
	return deploy
}

const instruction = "Investigate failures of the nightly export. Read the job's log before anything else, find the first error, and say in one sentence what failed and why."

// TestRequestCounted checks that the system instruction and the tool
// declarations of a request count toward the trigger with its contents.
func TestRequestCounted(t *testing.T) {
	p := newPipeline(t)
	// A long instruction, so that leaving it out cannot pass unseen.
	long := strings.Repeat(instruction+" ", 40)
	results := runAgent(t, p, agentConfig{llm: &fakeLLM{}, tools: []tool.Tool{readLogTool(t, "a short log"), deployTool(t)}, instruction: long})
	if len(results) != 2 {
		t.Fatalf("%d preparations", len(results))
	}
	first := results[0].Report
	t.Logf("first request: %d tokens, %d of them besides the contents", first.TokensBefore, first.ReservedTokens)
	mc := p.MessageCounter()
	// 5.7 KB of declarations are over a thousand tokens, the instruction
	// (to which the agent adds lines of its own) over a thousand more.
	tools, system := mc.CountText(strings.Repeat("Deploy the service to the named environment and wait. ", 100)), mc.CountText(long)
	if first.ReservedTokens < tools+system || tools < 1000 || system < 1000 {
		t.Errorf("first request counted %d tokens, %d of them for the system instruction and tools; want at least %d + %d", first.TokensBefore, first.ReservedTokens, system, tools)
	}
	if second := results[1].Report; second.ReservedTokens != first.ReservedTokens {
		t.Errorf("the instruction and tools counted %d, then %d", first.ReservedTokens, second.ReservedTokens)
	}
}

// usageLLM is fakeLLM with usage metadata in every response.
type usageLLM struct {
	fakeLLM
	prompt, cached int32
}

func (u *usageLLM) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for resp, err := range u.fakeLLM.GenerateContent(ctx, req, stream) {
			if resp != nil {
				resp.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: u.prompt,
					CachedContentTokenCount: u.cached, CandidatesTokenCount: 7, TotalTokenCount: u.prompt + 7}
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

// TestUsageObserved checks that the usage of a response calibrates the
// session's estimate of the next request.
func TestUsageObserved(t *testing.T) {
	p := newPipeline(t)
	results := runAgent(t, p, agentConfig{llm: &usageLLM{prompt: 2000, cached: 500}, tools: []tool.Tool{readLogTool(t, "a short log")},
		instruction: instruction, after: true})
	if len(results) != 2 {
		t.Fatalf("%d preparations", len(results))
	}
	first, second := results[0].Report, results[1].Report
	if first.Session.Calibrated || !second.Session.Calibrated {
		t.Fatalf("calibrated: first %v, second %v", first.Session.Calibrated, second.Session.Calibrated)
	}
	// The provider counted the first request as 2,000 tokens (cached ones
	// included): the second is estimated from it.
	if want := 2000 + second.TokensAfter - first.TokensAfter; second.EstimatedTokens != want {
		t.Errorf("second request estimated at %d tokens, want %d", second.EstimatedTokens, want)
	}
}
