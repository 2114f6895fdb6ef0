package agentctxadk_test

import (
	"context"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	agentctxadk "github.com/agentctx/agentctx/contrib/adk"
	"github.com/agentctx/agentctx/workspace"
)

// readingLLM calls read_log, then reads the result back through
// get_knowledge_by_id, page by page, from the <knowledge_list> reference it
// was sent in its place, as a model does; it keeps what it read.
type readingLLM struct {
	mu      sync.Mutex
	calls   int
	offered []string // the function declarations of the first request
	artID   string
	read    strings.Builder
	done    bool
	failure string
}

var (
	knowledgeID = regexp.MustCompile(`<knowledge id="([^"]+)"`)
	// "[Read limit of 40,000 characters reached: showing characters 0-38,950 of 60,020; ...]"
	readLimit = regexp.MustCompile(`\n\n\[Read limit of [\d,]+ characters reached: showing characters [\d,]+-([\d,]+) of`)
)

func (r *readingLLM) Name() string { return "reading" }

func (r *readingLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	resp := r.next(req)
	return func(yield func(*model.LLMResponse, error) bool) { yield(resp, nil) }
}

func (r *readingLLM) next(req *model.LLMRequest) *model.LLMResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		for _, gt := range req.Config.Tools {
			for _, fd := range gt.FunctionDeclarations {
				r.offered = append(r.offered, fd.Name)
			}
		}
		return functionCall("call_1", "read_log", map[string]any{})
	}
	answer := func(text string) *model.LLMResponse {
		return &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), TurnComplete: true}
	}
	last := req.Contents[len(req.Contents)-1]
	var fr *genai.FunctionResponse
	for _, part := range last.Parts {
		if part.FunctionResponse != nil {
			fr = part.FunctionResponse
		}
	}
	if fr == nil {
		r.failure = "no function response"
		return answer(r.failure)
	}
	offset := 0
	if fr.ID == "call_1" {
		text, _ := fr.Response["result"].(string)
		m := knowledgeID.FindStringSubmatch(text)
		if m == nil {
			r.failure = "no reference in " + text[:min(len(text), 200)]
			return answer(r.failure)
		}
		r.artID = m[1]
	} else {
		page, ok := fr.Response["output"].(string)
		if !ok {
			r.failure = "read failed: " + strings.TrimSpace(strings.Join(strings.Fields(fmtAny(fr.Response)), " "))
			return answer(r.failure)
		}
		loc := readLimit.FindStringSubmatchIndex(page)
		if loc == nil {
			r.read.WriteString(page)
			r.done = true
			return answer("The export timed out.")
		}
		next, _ := strconv.Atoi(strings.ReplaceAll(page[loc[2]:loc[3]], ",", ""))
		// The page holds characters offset..next, less a final "\n".
		r.read.WriteString(page[:loc[0]])
		if r.read.Len() < next {
			r.read.WriteString("\n")
		}
		offset = next
	}
	return functionCall("read_"+strconv.Itoa(r.calls), workspace.ToolGetKnowledgeByID, map[string]any{"artifact_id": r.artID, "offset": offset})
}

func fmtAny(m map[string]any) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=")
		if s, ok := v.(string); ok {
			b.WriteString(s)
		}
		b.WriteString(" ")
	}
	return b.String()
}

func functionCall(id, name string, args map[string]any) *model.LLMResponse {
	return &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}}}, TurnComplete: true}
}

// TestReadBackTools runs an agent whose model finds a reference where its
// 60,000-character function response was and reads the original back,
// whole, with the read-back tools.
func TestReadBackTools(t *testing.T) {
	p := newPipeline(t)
	log := bigLog()
	llm := &readingLLM{}
	results := runAgent(t, p, agentConfig{llm: llm, instruction: instruction,
		tools: append([]tool.Tool{readLogTool(t, log)}, agentctxadk.ReadBackTools(p.Workspace())...)})
	for _, name := range []string{workspace.ToolGetKnowledgeByID, workspace.ToolGetKnowledgeByLines, workspace.ToolGrepKnowledge} {
		if !slices.Contains(llm.offered, name) {
			t.Errorf("%s not offered: %v", name, llm.offered)
		}
	}
	if llm.failure != "" || !llm.done || llm.calls < 4 {
		t.Fatalf("the model read %d characters in %d calls (done %v): %s", llm.read.Len(), llm.calls, llm.done, llm.failure)
	}
	t.Logf("read %d characters in %d calls; the instruction and tools counted %d tokens", llm.read.Len(), llm.calls, results[0].Report.ReservedTokens)
	if llm.read.String() != log {
		t.Errorf("read back %d characters, want the %d of the log", llm.read.Len(), len(log))
	}
}

// TestReadBackToolErrors checks the declarations, and that a failed read
// is told to the model in the response's "error".
func TestReadBackToolErrors(t *testing.T) {
	p := newPipeline(t)
	tools := agentctxadk.ReadBackTools(p.Workspace())
	if len(tools) != len(workspace.Tools()) || agentctxadk.ReadBackTools(nil) != nil {
		t.Fatalf("%d tools", len(tools))
	}
	ft := tools[0].(interface {
		Declaration() *genai.FunctionDeclaration
		Run(ctx tool.Context, args any) (map[string]any, error)
	})
	d := ft.Declaration()
	params, _ := d.ParametersJsonSchema.(map[string]any)
	if d.Name != workspace.ToolGetKnowledgeByID || params["type"] != "object" || !strings.Contains(d.Description, "<knowledge_list>") {
		t.Errorf("declaration %+v", d)
	}
	res, err := ft.Run(toolContext{ctx: t.Context()}, map[string]any{"artifact_id": "tool_result_nope"})
	if text, _ := res["error"].(string); err != nil || !strings.HasPrefix(text, "Error:") {
		t.Errorf("%v %v", res, err)
	}
}

// toolContext is the context of a tool call outside an agent: only its
// context.Context methods are used.
type toolContext struct {
	tool.Context // nil
	ctx          context.Context
}

func (c toolContext) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c toolContext) Done() <-chan struct{}       { return c.ctx.Done() }
func (c toolContext) Err() error                  { return c.ctx.Err() }
func (c toolContext) Value(key any) any           { return c.ctx.Value(key) }
