package agentctxeino_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	agentctxeino "github.com/agentctx/agentctx/contrib/eino"
	"github.com/agentctx/agentctx/pipeline"
)

func bigLog() string {
	var b strings.Builder
	for i := 0; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "INFO batch %d exported\n", i)
	}
	return b.String() + "ERROR export failed: statement timeout\n"
}

// fakeModel calls the log tool, then answers; it records the messages of
// every call.
type fakeModel struct {
	mu     sync.Mutex
	inputs [][]*schema.Message
}

func (f *fakeModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputs = append(f.inputs, in)
	if len(f.inputs) == 1 {
		return &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{ID: "call_1", Type: "function",
			Function: schema.FunctionCall{Name: "read_log", Arguments: `{}`}}}}, nil
	}
	return &schema.Message{Role: schema.Assistant, Content: "The export timed out."}, nil
}

func (f *fakeModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := f.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (f *fakeModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return f, nil }

type logTool struct{ out string }

func (t logTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "read_log", Desc: "Read the job's log."}, nil
}

func (t logTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return t.out, nil
}

func TestChatModelAgent(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	p, err := pipeline.New(pipeline.Options{SessionID: "s1", WorkspaceDir: filepath.Join(dir, "ws"),
		Compact: compact.Options{Dir: filepath.Join(dir, "archive")}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var reports []*pipeline.Result
	fm := &fakeModel{}
	log := bigLog()
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "ops", Description: "ops agent", Instruction: "Investigate failures.",
		Model:       fm,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{logTool{log}}}},
		Handlers: []adk.ChatModelAgentMiddleware{agentctxeino.New(p, agentctxeino.Options{
			OnResult: func(_ context.Context, r *pipeline.Result) { reports = append(reports, r) }})},
	})
	if err != nil {
		t.Fatal(err)
	}
	it := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, "Why did the export fail?")
	var final string
	var toolOutput string
	for {
		ev, ok := it.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			msg, err := ev.Output.MessageOutput.GetMessage()
			if err != nil {
				t.Fatal(err)
			}
			if msg.Role == schema.Tool {
				toolOutput = msg.Content
			} else if msg.Content != "" {
				final = msg.Content
			}
		}
	}
	if final != "The export timed out." || len(fm.inputs) != 2 || len(reports) != 2 {
		t.Fatalf("final %q after %d model calls, %d preparations", final, len(fm.inputs), len(reports))
	}
	// The model saw a reference instead of the log; the agent kept the log.
	second := fm.inputs[1]
	last := second[len(second)-1]
	if last.Role != schema.Tool || last.ToolCallID != "call_1" || !strings.Contains(last.Content, "<knowledge_list>") || strings.Contains(last.Content, "INFO batch 100 exported") {
		t.Errorf("the model was sent %.300q", last.Content)
	}
	if toolOutput != log {
		t.Errorf("the agent's tool message changed: %d characters", len(toolOutput))
	}
	// Unchanged messages are the agent's own values.
	if second[0] == nil || second[len(second)-2].ToolCalls[0].ID != "call_1" {
		t.Errorf("messages: %+v", second)
	}
	// The original reads back whole from the workspace.
	id := regexp.MustCompile(`<knowledge id="([^"]+)"`).FindStringSubmatch(last.Content)
	a, err := p.Workspace().Get(ctx, id[1])
	if err != nil || a.Content != log {
		t.Errorf("read back: %v", err)
	}
}

type failing struct{}

func (failing) PrepareDocument(context.Context, *agentctx.Document) (*pipeline.Result, error) {
	return nil, fmt.Errorf("store is down")
}

func TestFailure(t *testing.T) {
	in := []*schema.Message{schema.UserMessage("hi")}
	if _, _, err := agentctxeino.PrepareMessages(t.Context(), failing{}, in, nil); err == nil {
		t.Errorf("no error")
	}
	m := agentctxeino.New(failing{}, agentctxeino.Options{FailOpen: true})
	wrapped, _ := m.WrapModel(t.Context(), &fakeModel{}, nil)
	if _, err := wrapped.Generate(t.Context(), in); err != nil {
		t.Errorf("fail open: %v", err)
	}
	wrapped, _ = agentctxeino.New(failing{}, agentctxeino.Options{}).WrapModel(t.Context(), &fakeModel{}, nil)
	if _, err := wrapped.Generate(t.Context(), in); err == nil || !strings.Contains(err.Error(), "store is down") {
		t.Errorf("fail closed: %v", err)
	}
}

type identity struct{ calls int }

func (p *identity) PrepareDocument(_ context.Context, doc *agentctx.Document) (*pipeline.Result, error) {
	p.calls++
	return &pipeline.Result{Messages: doc.Messages}, nil
}

// TestStreamKeepsMessages checks the streaming path, and that a list the
// pipeline leaves alone is passed on as the agent's own values.
func TestStreamKeepsMessages(t *testing.T) {
	p := &identity{}
	fm := &fakeModel{}
	wrapped, _ := agentctxeino.New(p, agentctxeino.Options{}).WrapModel(t.Context(), fm, nil)
	in := []*schema.Message{schema.SystemMessage("be brief"), schema.UserMessage("hi"),
		{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{ID: "c1", Function: schema.FunctionCall{Name: "ls", Arguments: "{}"}}}},
		schema.ToolMessage("a\nb", "c1")}
	sr, err := wrapped.Stream(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	sr.Close()
	if p.calls != 1 || len(fm.inputs) != 1 || len(fm.inputs[0]) != len(in) {
		t.Fatalf("%d preparations, inputs %v", p.calls, fm.inputs)
	}
	for i, m := range fm.inputs[0] {
		if m != in[i] {
			t.Errorf("message %d is a copy", i)
		}
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

// bigTool has 5.7 KB of definition, as the read-back tools do.
type bigTool struct{}

func (bigTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "deploy", Desc: strings.Repeat("Deploy the service to the named environment and wait. ", 100),
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"env": {Type: schema.String, Desc: "staging or production", Required: true}})}, nil
}

func (bigTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return "ok", nil
}

// usageModel answers every call with usage: PromptTokens is the
// provider's count, cached a part of it.
type usageModel struct {
	fakeModel
	prompt, cached int
}

func (u *usageModel) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	m, err := u.fakeModel.Generate(ctx, in, opts...)
	if m != nil {
		m.ResponseMeta = &schema.ResponseMeta{Usage: &schema.TokenUsage{PromptTokens: u.prompt, CompletionTokens: 7,
			PromptTokenDetails: schema.PromptTokenDetails{CachedTokens: u.cached}}}
	}
	return m, err
}

func (u *usageModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := u.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	// The input tokens come with the first chunk, the output tokens with
	// the last, as Anthropic's message_start and message_delta send them.
	usage := *m.ResponseMeta.Usage
	m.ResponseMeta.Usage.CompletionTokens = 0
	return schema.StreamReaderFromArray([]*schema.Message{m, {Role: schema.Assistant,
		ResponseMeta: &schema.ResponseMeta{Usage: &schema.TokenUsage{CompletionTokens: usage.CompletionTokens}}}}), nil
}

func (u *usageModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return u, nil }

// runAgent runs a ChatModelAgent with the middleware over p on one query
// and returns the results of its preparations.
func runAgent(t *testing.T, p *pipeline.Pipeline, m model.ToolCallingChatModel, tools ...tool.BaseTool) []*pipeline.Result {
	t.Helper()
	ctx := t.Context()
	var results []*pipeline.Result
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "ops", Description: "ops agent", Instruction: "Investigate failures.",
		Model:       m,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}},
		Handlers: []adk.ChatModelAgentMiddleware{agentctxeino.New(p, agentctxeino.Options{
			OnResult: func(_ context.Context, r *pipeline.Result) { results = append(results, r) }})},
	})
	if err != nil {
		t.Fatal(err)
	}
	it := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, "Why did the export fail?")
	for {
		ev, ok := it.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	return results
}

// TestToolsCounted checks that the tools a model call carries count toward
// the trigger with the messages, the system message among them.
func TestToolsCounted(t *testing.T) {
	p := newPipeline(t)
	results := runAgent(t, p, &fakeModel{}, logTool{"a short log"}, bigTool{})
	if len(results) != 2 {
		t.Fatalf("%d preparations", len(results))
	}
	first := results[0].Report
	t.Logf("first request: %d tokens, %d for the tools", first.TokensBefore, first.ReservedTokens)
	// 5.7 KB of tool definitions are over a thousand tokens; the messages
	// (the instruction, the question) a few dozen.
	if first.ReservedTokens < 1000 || first.TokensBefore < first.ReservedTokens+10 {
		t.Errorf("first request counted %d tokens, %d of them for the tools", first.TokensBefore, first.ReservedTokens)
	}
	if n := p.MessageCounter().CountText("Investigate failures."); first.TokensBefore-first.ReservedTokens < n {
		t.Errorf("the system message is not counted: %d tokens of messages", first.TokensBefore-first.ReservedTokens)
	}
	if second := results[1].Report; second.ReservedTokens != first.ReservedTokens {
		t.Errorf("the tools counted %d, then %d", first.ReservedTokens, second.ReservedTokens)
	}
}

// TestUsageObserved checks that the usage of a response calibrates the
// session's estimate of the next request.
func TestUsageObserved(t *testing.T) {
	p := newPipeline(t)
	results := runAgent(t, p, &usageModel{prompt: 2000, cached: 500}, logTool{"a short log"}, bigTool{})
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

// TestChatModel checks the wrapper for use outside an agent: the tools
// bound with WithTools are counted, and the usage of a streamed response is
// fed back when the stream ends.
func TestChatModel(t *testing.T) {
	ctx := t.Context()
	p := newPipeline(t)
	var results []*pipeline.Result
	info, _ := bigTool{}.Info(ctx)
	cm, err := agentctxeino.NewChatModel(p, &usageModel{prompt: 1800}, agentctxeino.Options{
		OnResult: func(_ context.Context, r *pipeline.Result) { results = append(results, r) }}).WithTools([]*schema.ToolInfo{info})
	if err != nil {
		t.Fatal(err)
	}
	in := []*schema.Message{schema.SystemMessage("Investigate failures."), schema.UserMessage("Why did the export fail?")}
	sr, err := cm.Stream(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	msgs := 0
	for {
		if _, err := sr.Recv(); err != nil {
			break
		}
		msgs++
	}
	sr.Close()
	if _, err := cm.Generate(ctx, in); err != nil {
		t.Fatal(err)
	}
	if msgs != 2 || len(results) != 2 {
		t.Fatalf("%d chunks, %d preparations", msgs, len(results))
	}
	first, second := results[0].Report, results[1].Report
	if first.ReservedTokens < 1000 || second.ReservedTokens != first.ReservedTokens {
		t.Errorf("the bound tools counted %d, then %d tokens", first.ReservedTokens, second.ReservedTokens)
	}
	if !second.Session.Calibrated || second.EstimatedTokens != 1800 {
		t.Errorf("after a streamed response of 1,800 prompt tokens: calibrated %v, estimate %d", second.Session.Calibrated, second.EstimatedTokens)
	}
}
