// Package anthropicx plugs agentctx into anthropic-sdk-go: a client
// middleware that runs the pipeline on every Messages request, the
// read-back tools as SDK tool params with a dispatcher for their calls, and
// conversions between the SDK's message params and agentctx messages.
//
// It is a package of its own so that programs that use only pipeline do not
// link the SDK.
//
// # Adoption
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1"})
//	client := anthropic.NewClient(anthropicx.WithPipeline(p))
//	params.Tools = append(params.Tools, anthropicx.Tools(p.Workspace())...)
//	...
//	for _, block := range msg.Content {
//		if u, ok := block.AsAny().(anthropic.ToolUseBlock); ok {
//			if res, handled := anthropicx.ExecuteTool(ctx, p.Workspace(), u); handled {
//				results = append(results, res)
//				continue
//			}
//			// the program's own tools
//		}
//	}
//
// The loop keeps its history as anthropic.MessageParam values, unchanged;
// the middleware reads each request body as the SDK wrote it, prepares its
// messages (prune, offload, compact; the top-level system prompt counted),
// and sends the prepared body. The usage of every response (streamed or
// not) is fed back to a *pipeline.Pipeline (Pipeline.Observe: the
// session's estimates then start from the provider's counts), or to a
// Preparer that implements Observer, or to Options.Observer.
//
// # Signed thinking
//
// With thinking on, the middleware follows the proxy's rules (one
// implementation, in internal/lib/thinking): the pipeline does not edit the
// messages the open turn's thinking is bound to (pipeline.CallOptions),
// and the thinking of an ended turn is removed once an edit changed what
// came before it, so no thinking block the API would judge invalid is
// sent. The middleware remembers the prefix each block was produced after
// from the requests it sent: use one middleware per loop.
package anthropicx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/sdkmw"
	"github.com/agentctx/agentctx/internal/lib/thinking"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/workspace"
)

// Preparer runs the pipeline on a request read as a document:
// *pipeline.Pipeline implements it.
type Preparer = sdkmw.Preparer

// Observer is an optional ability of a Preparer (or set in
// Options.Observer): it is told the usage of every response, a
// pricing.Usage (the module's one usage type, as in openaix, the
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

// ErrNotMessages is matched by the error of a Messages request whose body
// is not a JSON object with "messages".
var ErrNotMessages = sdkmw.ErrNotMessages

// provider intercepts POST .../v1/messages (and its beta form), not
// count_tokens or batches.
var provider = sdkmw.Provider{
	Name: "anthropic",
	Match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages")
	},
	API:     wire.Anthropic,
	Binding: thinkingBinding,
}

// thinkingBinding returns, for a request with thinking on, the prefix the
// open turn's signed thinking binds (the same rule as the proxy's, in
// internal/lib/thinking): the pipeline defers its edits there and compacts
// the whole list, so that no thinking block the API judges invalid is
// sent.
func thinkingBinding(body []byte, doc *agentctx.Document) pipeline.CallOptions {
	if !thinkingOn(doc) {
		return pipeline.CallOptions{}
	}
	return pipeline.CallOptions{Bound: thinking.Bound(doc.Messages)}
}

// Middleware returns the middleware that prepares every Messages request
// with p. The zero Options means the documented defaults.
//
// The middleware remembers the prefix each thinking block of its loop was
// produced after, and removes the thinking of an ended turn once an edit
// changed what came before it (internal/lib/thinking.Fix, the proxy's rule):
// use one middleware per loop (per Pipeline).
func Middleware(p Preparer, opts Options) option.Middleware {
	prov := provider
	prov.Finish = newThinkingMemory().finish
	return sdkmw.New(p, prov, opts)
}

// NativeMiddleware is Middleware in native context-management mode (the
// proxy's --context-management native): while thinking is on, the
// pipeline's prune and offload decisions on results already sent before a
// thinking block are not applied in the messages, which go as last sent,
// but delegated to Anthropic's context editing: a clear_tool_uses_20250919
// edit appended to the request's context_management.edits (the caller's
// own edits stay first), with its beta header. The API applies it after
// the thinking prefix check, so the open turn keeps its thinking; the
// pipeline still stores every original, counts and reports. A compaction
// of a request of 55,000 tokens or more is asked of the API instead
// (compact_20260112, the pipeline's "Stored originals" pointers in its
// instructions); the requests that carry the compaction block declare the
// edit, and the pipeline reads the history from the block on (the proxy's
// native compaction, proxy/native.go). Smaller compactions stay the
// pipeline's own. Use one middleware per loop.
func NativeMiddleware(p Preparer, opts Options) option.Middleware {
	m := newThinkingMemory()
	m.native = true
	prov := provider
	prov.Binding = func(body []byte, doc *agentctx.Document) pipeline.CallOptions {
		co := thinkingBinding(body, doc)
		co.EditBound = co.Bound > 0
		return co
	}
	prov.Finish = m.finish
	prov.Cut = compactionCut
	return sdkmw.New(p, prov, opts)
}

// WithPipelineNative is the client option that prepares every Messages
// request with p in native mode (NativeMiddleware).
func WithPipelineNative(p Preparer, opts Options) option.RequestOption {
	return option.WithMiddleware(NativeMiddleware(p, opts))
}

// WithPipeline is the client option that prepares every Messages request
// with p: anthropic.NewClient(anthropicx.WithPipeline(p)).
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
// params, to append to MessageNewParams.Tools. ws nil means the
// definitions with the default read cap.
func Tools(ws *workspace.Workspace) []anthropic.ToolUnionParam {
	defs := workspace.Tools()
	if ws != nil {
		defs = ws.Tools()
	}
	return ToolParams(defs)
}

// ToolParams converts tool definitions to SDK tool params.
func ToolParams(defs []workspace.ToolDefinition) []anthropic.ToolUnionParam {
	out := make([]anthropic.ToolUnionParam, len(defs))
	for i, d := range defs {
		var schema map[string]any
		_ = json.Unmarshal(d.InputSchema, &schema) // the workspace's schemas are valid JSON objects
		s := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			s.Required = make([]string, 0, len(req))
			for _, r := range req {
				s.Required = append(s.Required, r.(string))
			}
		}
		for k, v := range schema {
			if k != "type" && k != "properties" && k != "required" {
				s.ExtraFields[k] = v
			}
		}
		out[i] = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: d.Name, Description: anthropic.String(d.Description), InputSchema: s,
		}}
	}
	return out
}

// ExecuteTool runs a tool_use block of the model's reply when it calls one
// of the read-back tools, and returns the tool_result block to send back
// (marked is_error when the call failed) and handled = true. For any other
// tool it returns handled = false, and the program runs the call itself.
func ExecuteTool(ctx context.Context, ws Executor, call anthropic.ToolUseBlock) (anthropic.ContentBlockParamUnion, bool) {
	text, isError, handled := Execute(ctx, ws, call.Name, call.Input)
	if !handled {
		return anthropic.ContentBlockParamUnion{}, false
	}
	return anthropic.NewToolResultBlock(call.ID, text, isError), true
}

// Execute runs a read-back tool call by name and JSON input, and returns
// the text for the model, whether it is an error, and whether name is a
// read-back tool at all (handled false: the program's own tool).
func Execute(ctx context.Context, ws Executor, name string, input json.RawMessage) (text string, isError, handled bool) {
	if ws == nil {
		return "", false, false
	}
	text, err := ws.Execute(ctx, name, input)
	if errors.Is(err, workspace.ErrUnknownTool) {
		return "", false, false
	}
	return text, err != nil, true
}

// jsonBytes returns the JSON of a tool input as given: raw bytes are kept,
// anything else is marshaled.
func jsonBytes(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return bytes.Clone(x), nil
	}
	return json.Marshal(v)
}
