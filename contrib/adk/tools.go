package agentctxadk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/agentctx/agentctx/workspace"
)

// ReadBackTools returns the tools that read offloaded results back
// (get_knowledge_by_id, get_knowledge_by_lines, grep_knowledge, ...: the
// workspace's Tools) as adk function tools, to add to the agent's tools
// beside its own:
//
//	Tools: append(myTools, agentctxadk.ReadBackTools(p.Workspace())...),
//
// Every large function response the callback replaces names its artifact
// in a <knowledge_list> reference; with these tools the model reads it
// back. Each tool declares the workspace's definition (its JSON Schema as
// ParametersJsonSchema) and runs a call with ws.Execute; the text for the
// model is the response's "output", or its "error" when the call failed
// (bad arguments, an unknown artifact: the text says how to call the tool
// correctly). ws nil (a Pipeline that does not offload to a workspace)
// means no tools.
func ReadBackTools(ws *workspace.Workspace) []tool.Tool {
	if ws == nil {
		return nil
	}
	defs := ws.Tools()
	out := make([]tool.Tool, len(defs))
	for i, d := range defs {
		out[i] = &readBackTool{ws: ws, def: d}
	}
	return out
}

// readBackTool is an adk function tool: besides tool.Tool, it has the
// methods the agent's flow looks for (Declaration, Run, ProcessRequest).
type readBackTool struct {
	ws  *workspace.Workspace
	def workspace.ToolDefinition
}

var _ interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx tool.Context, args any) (map[string]any, error)
	ProcessRequest(ctx tool.Context, req *model.LLMRequest) error
} = (*readBackTool)(nil)

func (t *readBackTool) Name() string        { return t.def.Name }
func (t *readBackTool) Description() string { return t.def.Description }
func (t *readBackTool) IsLongRunning() bool { return false }

// Declaration returns the function declaration sent to the model.
func (t *readBackTool) Declaration() *genai.FunctionDeclaration {
	var params map[string]any
	_ = json.Unmarshal(t.def.InputSchema, &params) // the workspace's schemas are JSON objects
	return &genai.FunctionDeclaration{Name: t.def.Name, Description: t.def.Description, ParametersJsonSchema: params}
}

// ProcessRequest adds the tool to a request: its declaration to
// Config.Tools (with the other function declarations) and the tool to
// Tools, by which the flow runs a call.
func (t *readBackTool) ProcessRequest(_ tool.Context, req *model.LLMRequest) error {
	if req.Tools == nil {
		req.Tools = map[string]any{}
	}
	if _, ok := req.Tools[t.def.Name]; ok {
		return fmt.Errorf("agentctxadk: duplicate tool %q", t.def.Name)
	}
	req.Tools[t.def.Name] = t
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	for _, gt := range req.Config.Tools {
		if gt != nil && gt.FunctionDeclarations != nil {
			gt.FunctionDeclarations = append(gt.FunctionDeclarations, t.Declaration())
			return nil
		}
	}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{t.Declaration()}})
	return nil
}

// Run executes a call: args are the call's arguments (a JSON object).
func (t *readBackTool) Run(ctx tool.Context, args any) (map[string]any, error) {
	raw, err := json.Marshal(args)
	if err != nil || args == nil {
		raw = []byte("{}")
	}
	text, err := t.ws.Execute(ctx, t.def.Name, raw)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return map[string]any{"error": text}, nil
	}
	return map[string]any{"output": text}, nil
}
