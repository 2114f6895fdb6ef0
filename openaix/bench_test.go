package openaix_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/openaix"
	"github.com/agentctx/agentctx/pipeline"
)

// benchBody is a Chat Completions request with n messages, as the SDK
// writes it: a system prompt and a task, then exchanges of a bash call and
// its result (about 2,000 characters), and the read-back tools.
func benchBody(b *testing.B, n int) []byte {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(strings.Repeat("You are a careful engineer. ", 40)), openai.UserMessage("Fix the failing build.")}
	for i := 0; len(msgs) < n; i++ {
		id := fmt.Sprintf("call_%04d", i)
		msgs = append(msgs,
			openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "bash", Arguments: fmt.Sprintf(`{"command":"make test PKG=%d"}`, i)}}}}}},
			openai.ToolMessage(strings.Repeat(fmt.Sprintf("ok  pkg/%d  0.%03ds\n", i, i), 100), id))
	}
	body, err := json.Marshal(openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs[:n], Tools: openaix.Tools(nil)})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

type identity struct{}

// PrepareDocument keeps every message and says so in Sources, as a
// Pipeline does.
func (identity) PrepareDocument(_ context.Context, doc *agentctx.Document) (*pipeline.Result, error) {
	src := make([]int, len(doc.Messages))
	for i := range src {
		src[i] = i
	}
	return &pipeline.Result{Messages: doc.Messages, Sources: src}, nil
}

// BenchmarkMiddlewareOverhead is the cost the middleware adds to a request
// of 200 messages besides the pipeline.
func BenchmarkMiddlewareOverhead(b *testing.B) {
	body := benchBody(b, 200)
	mw := openaix.Middleware(identity{}, openaix.Options{})
	reply := []byte(completion(`{"role":"assistant","content":"ok"}`, 10))
	next := func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(reply))}, nil
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, "http://api.test/v1/chat/completions", bytes.NewReader(body))
		resp, err := mw(req, next)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// responsesBenchBody is a Responses request with n input items as
// openai-go writes it (store false, the whole history): a task, then
// function calls of bash and their outputs (about 2,000 characters), with
// a 1,100-character instructions and the read-back tools.
func responsesBenchBody(b *testing.B, n int) []byte {
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Fix the failing build.", responses.EasyInputMessageRoleUser)}
	for i := 0; len(input) < n; i++ {
		id := fmt.Sprintf("call_%04d", i)
		input = append(input,
			responses.ResponseInputItemParamOfFunctionCall(fmt.Sprintf(`{"command":"make test PKG=%d"}`, i), id, "bash"),
			responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(id),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(strings.Repeat(fmt.Sprintf("ok  pkg/%d  0.%03ds\n", i, i), 100))}}})
	}
	body, err := json.Marshal(responses.ResponseNewParams{Model: "gpt-test", Store: openai.Bool(false),
		Instructions: openai.String(strings.Repeat("You are a careful engineer. ", 40)),
		Input:        responses.ResponseNewParamsInputUnion{OfInputItemList: input[:n]}, Tools: openaix.ResponsesTools(nil)})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func benchResponses(b *testing.B, p openaix.Preparer) {
	body := responsesBenchBody(b, 200)
	mw := openaix.Middleware(p, openaix.Options{})
	reply := []byte(`{"id":"resp_1","object":"response","status":"completed","model":"gpt-test","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":60000,"input_tokens_details":{"cached_tokens":50000},"output_tokens":10,"total_tokens":60010}}`)
	next := func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(reply))}, nil
	}
	send := func() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, "http://api.test/v1/responses", bytes.NewReader(body))
		resp, err := mw(req, next)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send() // warm: the session has seen the history
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		send()
	}
}

// BenchmarkResponsesOverhead is the cost the middleware adds to a
// Responses request of 200 input items besides the pipeline.
func BenchmarkResponsesOverhead(b *testing.B) { benchResponses(b, identity{}) }

// BenchmarkResponsesPipeline is the whole middleware with the default
// pipeline on a Responses request of 200 input items (the same history
// on every request, as in a live loop, after a first one).
func BenchmarkResponsesPipeline(b *testing.B) { benchResponses(b, newPipeline(b)) }
