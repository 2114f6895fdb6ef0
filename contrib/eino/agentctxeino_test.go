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
		Handlers: []adk.ChatModelAgentMiddleware{agentctxeino.New(p, &agentctxeino.Options{
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

func (failing) Prepare(context.Context, []agentctx.Message) (*pipeline.Result, error) {
	return nil, fmt.Errorf("store is down")
}

func TestFailure(t *testing.T) {
	in := []*schema.Message{schema.UserMessage("hi")}
	if _, _, err := agentctxeino.PrepareMessages(t.Context(), failing{}, in); err == nil {
		t.Errorf("no error")
	}
	m := agentctxeino.New(failing{}, &agentctxeino.Options{FailOpen: true})
	wrapped, _ := m.WrapModel(t.Context(), &fakeModel{}, nil)
	if _, err := wrapped.Generate(t.Context(), in); err != nil {
		t.Errorf("fail open: %v", err)
	}
	wrapped, _ = agentctxeino.New(failing{}, nil).WrapModel(t.Context(), &fakeModel{}, nil)
	if _, err := wrapped.Generate(t.Context(), in); err == nil || !strings.Contains(err.Error(), "store is down") {
		t.Errorf("fail closed: %v", err)
	}
}

type identity struct{ calls int }

func (p *identity) Prepare(_ context.Context, msgs []agentctx.Message) (*pipeline.Result, error) {
	p.calls++
	return &pipeline.Result{Messages: msgs}, nil
}

// TestStreamKeepsMessages checks the streaming path, and that a list the
// pipeline leaves alone is passed on as the agent's own values.
func TestStreamKeepsMessages(t *testing.T) {
	p := &identity{}
	fm := &fakeModel{}
	wrapped, _ := agentctxeino.New(p, nil).WrapModel(t.Context(), fm, nil)
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
