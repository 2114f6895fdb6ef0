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

func (identity) PrepareDocument(_ context.Context, doc *agentctx.Document) (*pipeline.Result, error) {
	return &pipeline.Result{Messages: doc.Messages}, nil
}

// BenchmarkMiddlewareOverhead is the cost the middleware adds to a request
// of 200 messages besides the pipeline.
func BenchmarkMiddlewareOverhead(b *testing.B) {
	body := benchBody(b, 200)
	mw := openaix.Middleware(identity{}, nil)
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
