package agentctxeino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/agentctx/agentctx/workspace"
)

// ReadBackTools returns the tools that read offloaded results back
// (get_knowledge_by_id, get_knowledge_by_lines, grep_knowledge, ...: the
// workspace's Tools) as eino tools, to add to the agent's tools beside its
// own:
//
//	tools := append(myTools, agentctxeino.ReadBackTools(p.Workspace())...)
//
// Every large tool result the middleware replaces names its artifact in a
// <knowledge_list> reference; with these tools the model reads it back.
// Each tool is an InvokableTool run by ws.Execute. A call that fails (bad
// arguments, an unknown artifact) returns the error text written for the
// model, with a nil error, so that the agent goes on and the model can
// correct the call; only a canceled or expired ctx is returned as an
// error. ws nil (a Pipeline that does not offload to a workspace) means no
// tools.
func ReadBackTools(ws *workspace.Workspace) []tool.BaseTool {
	if ws == nil {
		return nil
	}
	defs := ws.Tools()
	out := make([]tool.BaseTool, len(defs))
	for i, d := range defs {
		out[i] = &readBackTool{ws: ws, def: d}
	}
	return out
}

type readBackTool struct {
	ws  *workspace.Workspace
	def workspace.ToolDefinition
}

var _ tool.InvokableTool = (*readBackTool)(nil)

func (t *readBackTool) Info(context.Context) (*schema.ToolInfo, error) {
	return ToolInfo(t.def)
}

func (t *readBackTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	text, err := t.ws.Execute(ctx, t.def.Name, json.RawMessage(args))
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return "", err
	}
	return text, nil
}

// ToolInfo converts a tool definition to an eino ToolInfo, its input
// schema given as JSON Schema.
func ToolInfo(d workspace.ToolDefinition) (*schema.ToolInfo, error) {
	info := &schema.ToolInfo{Name: d.Name, Desc: d.Description}
	if len(d.InputSchema) > 0 {
		s := new(jsonschema.Schema)
		if err := json.Unmarshal(d.InputSchema, s); err != nil {
			return nil, fmt.Errorf("agentctxeino: tool %s: input schema: %w", d.Name, err)
		}
		info.ParamsOneOf = schema.NewParamsOneOfByJSONSchema(s)
	}
	return info, nil
}
