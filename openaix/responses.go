package openaix

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/respitems"
	"github.com/agentctx/agentctx/internal/lib/sdkmw"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/workspace"
)

// responsesProvider prepares POST /responses requests (not
// /responses/compact, nor the other Responses endpoints).
var responsesProvider = sdkmw.Provider{
	Name: "openai",
	Match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses")
	},
	API:    wire.Responses,
	Decode: decodeResponses,
}

// decodeResponses reads the input items of a Responses request as
// messages (internal/lib/respitems, the proxy's mapping), and returns the
// function that writes the request to send: the body with only "input"
// replaced, every item of a message the pipeline kept as it came. A
// request whose history the server keeps (store not false, or a
// previous_response_id) or whose input is not an array of items is sent
// unchanged, as the proxy does.
func decodeResponses(_ context.Context, body []byte) (*agentctx.Document, func([]agentctx.Message, []int) ([]byte, error), error) {
	if rawjson.Kind(body) != '{' {
		return nil, nil, ErrNotMessages
	}
	ms, err := rawjson.Members(body)
	if err != nil {
		return nil, nil, ErrNotMessages
	}
	var input, store, prev []byte
	for _, m := range ms {
		switch m.Key {
		case "input":
			input = m.Value
		case "store":
			store = m.Value
		case "previous_response_id":
			prev = m.Value
		}
	}
	if rawjson.Kind(store) != 'f' || (len(prev) > 0 && rawjson.Kind(prev) != 'n') || rawjson.Kind(input) != '[' {
		return nil, nil, nil
	}
	items, err := rawjson.Elements(input)
	if err != nil {
		return nil, nil, err
	}
	msgs, groups, err := respitems.Messages(items)
	if err != nil {
		return nil, nil, err
	}
	doc := &agentctx.Document{Format: agentctx.FormatArray, Messages: msgs}
	encode := func(out []agentctx.Message, sources []int) ([]byte, error) {
		match, err := respitems.Match(msgs, out, sources)
		if err != nil {
			return nil, err
		}
		if len(out) == len(msgs) && !changed(match) {
			return body, nil
		}
		list := respitems.Splice(items, msgs, groups, out, match)
		off := cap(body) - cap(input) // input is a subslice of body
		b := make([]byte, 0, len(body)-len(input)+len(list))
		b = append(b, body[:off]...)
		b = append(b, list...)
		return append(b, body[off+len(input):]...), nil
	}
	return doc, encode, nil
}

func changed(match []int) bool {
	for j, k := range match {
		if k != j {
			return true
		}
	}
	return false
}

// ResponsesTools returns the read-back tools (workspace.Workspace.Tools)
// as Responses function tools, to append to ResponseNewParams.Tools. ws
// nil means the definitions with the default read cap.
func ResponsesTools(ws *workspace.Workspace) []responses.ToolUnionParam {
	defs := workspace.Tools()
	if ws != nil {
		defs = ws.Tools()
	}
	return ResponsesToolParams(defs)
}

// ResponsesToolParams converts tool definitions to Responses function
// tools (not strict: the read-back tools have optional parameters).
func ResponsesToolParams(defs []workspace.ToolDefinition) []responses.ToolUnionParam {
	out := make([]responses.ToolUnionParam, len(defs))
	for i, d := range defs {
		var schema map[string]any
		_ = json.Unmarshal(d.InputSchema, &schema) // the workspace's schemas are valid JSON objects
		out[i] = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: d.Name, Description: openai.String(d.Description), Parameters: schema, Strict: openai.Bool(false),
		}}
	}
	return out
}

// ExecuteResponsesTool runs a function call of a Responses answer (an
// output item of type function_call) when it calls one of the read-back
// tools, and returns the function_call_output item to append to the input
// and handled = true. A failed call's output starts with "Error: ". For
// any other tool it returns handled = false, and the program runs the
// call itself.
func ExecuteResponsesTool(ctx context.Context, ws Executor, call responses.ResponseFunctionToolCall) (responses.ResponseInputItemUnionParam, bool) {
	text, _, handled := Execute(ctx, ws, call.Name, json.RawMessage(call.Arguments))
	if !handled {
		return responses.ResponseInputItemUnionParam{}, false
	}
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: openai.String(call.CallID),
		Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(text)},
	}}, true
}
