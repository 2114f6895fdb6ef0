// Package openaix plugs agentctx into openai-go: a client middleware that
// runs the pipeline on every Chat Completions request (with any
// OpenAI-compatible server), the read-back tools as SDK tool params with a
// dispatcher for their calls, and conversions between the SDK's message
// params and agentctx messages.
//
// It is a package of its own so that programs that use only pipeline do not
// link the SDK.
//
// # Adoption
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1"})
//	client := openai.NewClient(openaix.WithPipeline(p))
//	params.Tools = append(params.Tools, openaix.Tools(p.Workspace())...)
//	...
//	for _, call := range completion.Choices[0].Message.ToolCalls {
//		if msg, handled := openaix.ExecuteTool(ctx, p.Workspace(), call); handled {
//			params.Messages = append(params.Messages, msg)
//			continue
//		}
//		// the program's own tools
//	}
//
// The middleware reads each /chat/completions request body as the SDK wrote
// it, prepares its messages and sends the prepared body; other endpoints
// (the Responses API among them) pass through unchanged. The usage of
// every response is fed back to a *pipeline.Pipeline (Pipeline.Observe),
// or to a Preparer that implements Observer, or to Options.Observer (for a
// streamed response, ask for it with stream_options.include_usage).
//
// # Context management
//
// Every edit is applied in the messages sent: Chat Completions has no
// context management of OpenAI's, so there is nothing for a native mode to
// delegate to (the proxy's --context-management native falls back the
// same way for it). OpenAI's compaction exists only for the Responses API,
// which this middleware passes through; the proxy applies it there.
package openaix

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentctx/agentctx/internal/sdkmw"
	"github.com/agentctx/agentctx/workspace"
)

// Preparer runs the pipeline on a request read as a document:
// *pipeline.Pipeline implements it.
type Preparer = sdkmw.Preparer

// Observer is an optional ability of a Preparer (or set in
// Options.Observer): it is told the usage of every response.
type Observer = sdkmw.Observer

// Usage is the token usage of one response, normalized across providers
// (the same type as anthropicx.Usage): Provider ("anthropic" or "openai"),
// InputTokens (every input token, cached ones included), CacheReadTokens,
// CacheWriteTokens and OutputTokens.
type Usage = sdkmw.Usage

// Options configure the middleware (the same type as in the other SDK's
// package). Its fields:
//
//   - Observer Observer: receives the usage of each response; nil means
//     the Preparer when it implements Observer, or, for a
//     *pipeline.Pipeline, its Observe.
//   - OnResult func(ctx, *pipeline.Result): called with the result of every
//     preparation (the messages sent and the report).
//   - FailOpen bool: send a request unchanged when it cannot be prepared,
//     after logging why; by default the request fails with the error.
//   - Logger *slog.Logger: receives a record per failure; nil discards them.
//
// The zero value means: fail a request whose preparation fails, log
// nothing, feed usage back to a *pipeline.Pipeline or an Observer.
type Options = sdkmw.Options

// ErrNotMessages is matched by the error of a request whose body is not a
// JSON object with "messages".
var ErrNotMessages = sdkmw.ErrNotMessages

var provider = sdkmw.Provider{
	Name: "openai",
	Match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions")
	},
	Usage: readUsage,
}

// Middleware returns the middleware that prepares every Chat Completions
// request with p. opts may be nil.
func Middleware(p Preparer, opts *Options) option.Middleware {
	return sdkmw.New(p, provider, opts)
}

// WithPipeline is the client option that prepares every Chat Completions
// request with p: openai.NewClient(openaix.WithPipeline(p)).
func WithPipeline(p Preparer) option.RequestOption {
	return option.WithMiddleware(Middleware(p, nil))
}

// WithPipelineOptions is WithPipeline with options.
func WithPipelineOptions(p Preparer, opts *Options) option.RequestOption {
	return option.WithMiddleware(Middleware(p, opts))
}

func readUsage(data []byte, u *Usage) bool {
	var v struct {
		Usage *struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if len(data) == 0 || json.Unmarshal(data, &v) != nil || v.Usage == nil {
		return false
	}
	u.InputTokens, u.OutputTokens = v.Usage.PromptTokens, v.Usage.CompletionTokens
	if d := v.Usage.PromptTokensDetails; d != nil {
		u.CacheReadTokens = d.CachedTokens
	}
	return true
}

// Executor runs a read-back tool call: *workspace.Workspace implements it.
type Executor interface {
	Execute(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// Tools returns the read-back tools (workspace.Workspace.Tools) as SDK tool
// params, to append to ChatCompletionNewParams.Tools. ws nil means the
// definitions with the default read cap.
func Tools(ws *workspace.Workspace) []openai.ChatCompletionToolUnionParam {
	defs := workspace.Tools()
	if ws != nil {
		defs = ws.Tools()
	}
	return ToolParams(defs)
}

// ToolParams converts tool definitions to SDK tool params.
func ToolParams(defs []workspace.ToolDefinition) []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, len(defs))
	for i, d := range defs {
		var schema map[string]any
		_ = json.Unmarshal(d.InputSchema, &schema) // the workspace's schemas are valid JSON objects
		out[i] = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: openai.String(d.Description), Parameters: schema,
		})
	}
	return out
}

// ExecuteTool runs a tool call of the model's reply when it calls one of
// the read-back tools, and returns the tool message to append to the
// history and handled = true. A failed call's message starts with
// "Error: " (Chat Completions has no error flag). For any other tool it
// returns handled = false, and the program runs the call itself.
func ExecuteTool(ctx context.Context, ws Executor, call openai.ChatCompletionMessageToolCallUnion) (openai.ChatCompletionMessageParamUnion, bool) {
	if call.Type != "" && call.Type != "function" {
		return openai.ChatCompletionMessageParamUnion{}, false
	}
	text, _, handled := Execute(ctx, ws, call.Function.Name, json.RawMessage(call.Function.Arguments))
	if !handled {
		return openai.ChatCompletionMessageParamUnion{}, false
	}
	return openai.ToolMessage(text, call.ID), true
}

// Execute runs a read-back tool call by name and JSON arguments, and
// returns the text for the model, whether it is an error, and whether name
// is a read-back tool at all (handled false: the program's own tool).
func Execute(ctx context.Context, ws Executor, name string, args json.RawMessage) (text string, isError, handled bool) {
	if ws == nil {
		return "", false, false
	}
	text, err := ws.Execute(ctx, name, args)
	if errors.Is(err, workspace.ErrUnknownTool) {
		return "", false, false
	}
	return text, err != nil, true
}
