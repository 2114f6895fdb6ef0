package agentctxeino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"

	agentctxeino "github.com/agentctx/agentctx/contrib/eino"
	"github.com/agentctx/agentctx/workspace"
)

// readingModel calls read_log, then reads the result back through
// get_knowledge_by_id, page by page, from the <knowledge_list> reference it
// was sent in its place, as a model does; it keeps what it read.
type readingModel struct {
	mu      sync.Mutex
	calls   int
	offered []string // the tools of the first call
	artID   string
	read    strings.Builder
	done    bool
}

var (
	knowledgeID = regexp.MustCompile(`<knowledge id="([^"]+)"`)
	// "[Read limit of 40,000 characters reached: showing characters 0-38,950 of 60,020; ...]"
	readLimit = regexp.MustCompile(`\n\n\[Read limit of [\d,]+ characters reached: showing characters [\d,]+-([\d,]+) of`)
)

func (r *readingModel) Generate(_ context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		for _, t := range model.GetCommonOptions(nil, opts...).Tools {
			r.offered = append(r.offered, t.Name)
		}
		return call("call_1", "read_log", `{}`), nil
	}
	last := in[len(in)-1]
	if last.Role != schema.Tool {
		return nil, fmt.Errorf("last message is %s", last.Role)
	}
	offset := 0
	if last.ToolCallID == "call_1" {
		m := knowledgeID.FindStringSubmatch(last.Content)
		if m == nil {
			return &schema.Message{Role: schema.Assistant, Content: "no reference"}, nil
		}
		r.artID = m[1]
	} else {
		page := last.Content
		if loc := readLimit.FindStringSubmatchIndex(page); loc != nil {
			next, _ := strconv.Atoi(strings.ReplaceAll(page[loc[2]:loc[3]], ",", ""))
			// The page holds characters offset..next, less a final "\n".
			r.read.WriteString(page[:loc[0]])
			if r.read.Len() < next {
				r.read.WriteString("\n")
			}
			offset = next
		} else {
			r.read.WriteString(page)
			r.done = true
			return &schema.Message{Role: schema.Assistant, Content: "The export timed out."}, nil
		}
	}
	args, _ := json.Marshal(map[string]any{"artifact_id": r.artID, "offset": offset})
	return call("read_"+strconv.Itoa(r.calls), workspace.ToolGetKnowledgeByID, string(args)), nil
}

func (r *readingModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := r.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (r *readingModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return r, nil
}

func call(id, name, args string) *schema.Message {
	return &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{ID: id, Type: "function",
		Function: schema.FunctionCall{Name: name, Arguments: args}}}}
}

// TestReadBackTools runs an agent whose model finds a reference where its
// 60,000-character tool result was and reads the original back, whole,
// with the read-back tools.
func TestReadBackTools(t *testing.T) {
	p := newPipeline(t)
	log := bigLog()
	rm := &readingModel{}
	tools := append([]tool.BaseTool{logTool{log}}, agentctxeino.ReadBackTools(p.Workspace())...)
	results := runAgent(t, p, rm, tools...)
	for _, name := range []string{workspace.ToolGetKnowledgeByID, workspace.ToolGetKnowledgeByLines, workspace.ToolGrepKnowledge} {
		if !slices.Contains(rm.offered, name) {
			t.Errorf("%s not offered: %v", name, rm.offered)
		}
	}
	if !rm.done || rm.calls < 4 {
		t.Fatalf("the model read %d characters in %d calls (done %v)", rm.read.Len(), rm.calls, rm.done)
	}
	t.Logf("read %d characters in %d calls; the tools counted %d tokens", rm.read.Len(), rm.calls, results[0].Report.ReservedTokens)
	if rm.read.String() != log {
		t.Errorf("read back %d characters, want the %d of the log", rm.read.Len(), len(log))
	}
	if first := results[0].Report; first.ReservedTokens < 1000 {
		t.Errorf("the read-back tools counted %d tokens", first.ReservedTokens)
	}
}

// TestReadBackToolErrors checks that a failed read is told to the model,
// not returned as an error that would end the agent's run.
func TestReadBackToolErrors(t *testing.T) {
	p := newPipeline(t)
	tools := agentctxeino.ReadBackTools(p.Workspace())
	if len(tools) != len(workspace.Tools()) {
		t.Fatalf("%d tools", len(tools))
	}
	byID := tools[0].(tool.InvokableTool)
	info, err := byID.Info(t.Context())
	if err != nil || info.Name != workspace.ToolGetKnowledgeByID {
		t.Fatalf("%v %v", info, err)
	}
	s, err := info.ParamsOneOf.ToJSONSchema()
	if err != nil || s.Required[0] != "artifact_id" {
		t.Errorf("schema %v %v", s, err)
	}
	text, err := byID.InvokableRun(t.Context(), `{"artifact_id": "tool_result_nope"}`)
	if err != nil || !strings.HasPrefix(text, "Error:") {
		t.Errorf("%q %v", text, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := byID.InvokableRun(ctx, `{"artifact_id": "tool_result_nope"}`); err == nil {
		t.Errorf("canceled: no error")
	}
	if agentctxeino.ReadBackTools(nil) != nil {
		t.Errorf("tools without a workspace")
	}
}
