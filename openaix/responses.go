package openaix

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/decodecache"
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

// itemCache keeps the input items a Responses middleware parsed, per
// conversation (internal/lib/decodecache), so that a warm request parses
// only the items its conversation's last request did not send.
type itemCache = decodecache.Cache[*itemEntry]

// itemEntry is one input item as parsed: never modified once cached
// (respitems.Group copies what it takes of it).
type itemEntry struct {
	raw decodecache.Print
	it  *respitems.Item
}

// Print implements decodecache.Entry.
func (e *itemEntry) Print() decodecache.Print { return e.raw }

// Size implements decodecache.Entry: the item's strings (about its
// bytes), the entry and item structs, and the message's blocks and the
// call (decodecache.ItemBytes). A flat 256 bytes of structure was 0.45
// of what an item of a message of four text parts keeps
// (TestItemCacheSizeIsHonest).
func (e *itemEntry) Size() int64 {
	n := int64(e.raw.N) + itemEntryBytes
	if e.it != nil {
		n += decodecache.ItemBytes(e.it)
	}
	return n
}

var itemEntryBytes = int64(reflect.TypeFor[itemEntry]().Size())

// newItemCache returns the cache for Options.DecodeCacheBytes (0: the
// default bound; negative: none).
func newItemCache(max int64) *itemCache {
	switch {
	case max == 0:
		return decodecache.New[*itemEntry](sdkmw.DefaultDecodeCacheBytes)
	case max > 0:
		return decodecache.New[*itemEntry](max)
	}
	return nil
}

// responsesDecoder returns responsesProvider's Decode reading through a
// cache bounded as Options.DecodeCacheBytes says.
func responsesDecoder(max int64) func(context.Context, []byte) (*agentctx.Document, func([]agentctx.Message, []int) ([]byte, error), error) {
	c := newItemCache(max)
	return func(ctx context.Context, body []byte) (*agentctx.Document, func([]agentctx.Message, []int) ([]byte, error), error) {
		return decodeResponsesCached(ctx, c, body)
	}
}

// decodeResponses is decodeResponsesCached without a cache.
func decodeResponses(ctx context.Context, body []byte) (*agentctx.Document, func([]agentctx.Message, []int) ([]byte, error), error) {
	return decodeResponsesCached(ctx, nil, body)
}

// decodeResponsesCached reads the input items of a Responses request as
// messages (internal/lib/respitems, the proxy's mapping), parsing only the
// items c does not hold (c may be nil), and returns the function that
// writes the request to send: the body with only "input" replaced, every
// item of a message the pipeline kept as it came. A request whose history
// the server keeps (store not false, or a previous_response_id) or whose
// input is not an array of items is sent unchanged, as the proxy does.
func decodeResponsesCached(_ context.Context, c *itemCache, body []byte) (*agentctx.Document, func([]agentctx.Message, []int) ([]byte, error), error) {
	ls := &decodecache.Scan[*itemEntry]{Cache: c, Prefix: "responses\x00", Member: "input", Noun: "input item"}
	ls.Data = body[rawjson.SkipSpace(body, 0):]
	wb, err := wire.SplitBody(body, ls.ValueAt)
	if err != nil {
		return nil, nil, ErrNotMessages
	}
	var input, store, prev []byte
	for _, m := range wb.Members {
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
	items := ls.Items // the last "input" member's, as input is
	ents, err := ls.Decode(func(raw []byte) (*itemEntry, error) {
		it, err := respitems.Parse(raw)
		if err != nil {
			return nil, err
		}
		return &itemEntry{raw: c.PrintOf(raw), it: it}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	its := make([]*respitems.Item, len(ents))
	for k, e := range ents {
		its[k] = e.it
	}
	msgs, groups := respitems.Group(its)
	doc := &agentctx.Document{Format: agentctx.FormatArray, Messages: msgs}
	encode := func(out []agentctx.Message, sources []int) ([]byte, error) {
		match, err := respitems.Match(msgs, out, sources)
		if err != nil {
			return nil, err
		}
		if len(out) == len(msgs) && !changed(match) {
			return body, nil
		}
		off := cap(body) - cap(input) // input is a subslice of body
		b := make([]byte, 0, len(body)-len(input)+respitems.SpliceCap(items))
		b = append(b, body[:off]...)
		b = respitems.AppendSplice(b, items, msgs, groups, out, match)
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
