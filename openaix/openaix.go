// Package openaix plugs agentctx into openai-go: a client middleware that
// runs the pipeline on every Chat Completions request (with any
// OpenAI-compatible server) and every Responses request, the read-back
// tools as SDK tool params with a dispatcher for their calls (in the shape
// of each API), and conversions between the SDK's message params and
// agentctx messages.
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
// On the Responses API (client.Responses.New with Store false and the
// whole input each time), the tools are ResponsesTools and the dispatcher
// ExecuteResponsesTool:
//
//	params.Tools = append(params.Tools, openaix.ResponsesTools(p.Workspace())...)
//	...
//	for _, item := range resp.Output {
//		if item.Type == "function_call" {
//			if out, handled := openaix.ExecuteResponsesTool(ctx, p.Workspace(), item.AsFunctionCall()); handled {
//				input = append(input, out)
//				continue
//			}
//			// the program's own tools
//		}
//	}
//
// The middleware reads each /chat/completions request body as the SDK wrote
// it, prepares its messages and sends the prepared body. A /responses
// request's input items are mapped onto messages the way the proxy maps
// them (internal/lib/respitems: consecutive calls and reasoning items are one
// assistant message, outputs are tool messages); the items of every
// message the pipeline kept are sent byte for byte, a pruned or offloaded
// result as its item with only "output" replaced. A Responses request
// whose history the server keeps (store not false, or a
// previous_response_id) is sent unchanged, as the proxy does, and so are
// the other endpoints. The usage of every prepared response, streamed or
// not, is fed back to a *pipeline.Pipeline (Pipeline.Observe), or to a
// Preparer that implements Observer, or to Options.Observer (for a
// streamed Chat Completions response, ask for it with
// stream_options.include_usage).
//
// # Context management
//
// By default every edit is applied in the messages sent. NativeMiddleware
// (WithPipelineNative, with NativeSummarizer as the pipeline's
// summarizer) has OpenAI's Responses compaction write the pipeline's
// compactions of Responses requests: agentctx decides and stores the
// originals, the provider compacts (see NativeMiddleware). Chat
// Completions has no context management of OpenAI's: its requests are
// edited client-side in both modes, as the proxy's --context-management
// native does.
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

	"github.com/agentctx/agentctx/internal/lib/sdkmw"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/workspace"
)

// Preparer runs the pipeline on a request read as a document:
// *pipeline.Pipeline implements it.
type Preparer = sdkmw.Preparer

// Observer is an optional ability of a Preparer (or set in
// Options.Observer): it is told the usage of every response, a
// pricing.Usage (the module's one usage type, as in anthropicx, the
// proxy and the pipeline: uncached input, cache reads, 5-minute and
// 1-hour cache writes, output).
type Observer = sdkmw.Observer

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
	API: wire.Chat,
}

// Middleware returns the middleware that prepares every Chat Completions
// and Responses request with p. The zero Options means the documented
// defaults.
func Middleware(p Preparer, opts Options) option.Middleware {
	rp := responsesProvider
	rp.Decode = responsesDecoder(opts.DecodeCacheBytes)
	chat, resp := sdkmw.New(p, provider, opts), sdkmw.New(p, rp, opts)
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if responsesProvider.Match(req) {
			return resp(req, next)
		}
		return chat(req, next)
	}
}

// WithPipeline is the client option that prepares every Chat Completions
// and Responses request with p: openai.NewClient(openaix.WithPipeline(p)).
func WithPipeline(p Preparer) option.RequestOption {
	return option.WithMiddleware(Middleware(p, Options{}))
}

// WithPipelineOptions is WithPipeline with options.
func WithPipelineOptions(p Preparer, opts Options) option.RequestOption {
	return option.WithMiddleware(Middleware(p, opts))
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
