package anthropicx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/pipeline"
)

// benchBody is the body of a Messages request with n messages, as the SDK
// writes it: a task, then exchanges of a bash call and its result (about
// 2,000 characters, as a list of one text block), a system prompt and tools.
func benchBody(b *testing.B, n int) []byte {
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Fix the failing build."))}
	for i := 0; len(msgs) < n; i++ {
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Next step."), anthropic.NewToolUseBlock(id, map[string]any{"command": fmt.Sprintf("make test PKG=%d", i)}, "bash")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, strings.Repeat(fmt.Sprintf("ok  pkg/%d  0.%03ds\n", i, i), 100), false)))
	}
	body, err := json.Marshal(anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 4096, Messages: msgs[:n],
		System: []anthropic.TextBlockParam{{Text: strings.Repeat("You are a careful engineer. ", 40)}},
		Tools:  anthropicx.Tools(nil),
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// identity prepares nothing: the middleware's own cost.
type identity struct{}

func (identity) PrepareDocument(_ context.Context, doc *agentctx.Document) (*pipeline.Result, error) {
	return &pipeline.Result{Messages: doc.Messages}, nil
}

func benchMiddleware(b *testing.B, p anthropicx.Preparer) {
	body := benchBody(b, 200)
	mw := anthropicx.Middleware(p, anthropicx.Options{})
	reply := []byte(textReply("ok"))
	next := func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(reply))}, nil
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, "http://api.test/v1/messages", bytes.NewReader(body))
		resp, err := mw(req, next)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkMiddlewareOverhead is the cost the middleware adds to a request
// of 200 messages besides the pipeline: read the body as a document, write
// the prepared one back, watch the response for usage.
func BenchmarkMiddlewareOverhead(b *testing.B) { benchMiddleware(b, identity{}) }

// BenchmarkMiddlewarePipeline is the whole middleware with the default
// pipeline (repeated requests of the same history, as in a live loop).
func BenchmarkMiddlewarePipeline(b *testing.B) { benchMiddleware(b, newPipeline(b)) }

// BenchmarkGlueOverhead is, for comparison, the glue a loop needed before
// the middleware (issue 16): the SDK params to JSON, decoded as agentctx
// messages, prepared (here: nothing done), encoded, and decoded back into
// SDK params, which the SDK then encodes again for the request.
func BenchmarkGlueOverhead(b *testing.B) {
	var params anthropic.MessageNewParams
	if err := json.Unmarshal(benchBody(b, 200), &params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		raw, err := json.Marshal(params.Messages)
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := agentctx.UnmarshalMessages(raw)
		if err != nil {
			b.Fatal(err)
		}
		out, err := agentctx.MarshalMessages(agentctx.StripMetadata(msgs))
		if err != nil {
			b.Fatal(err)
		}
		var back []anthropic.MessageParam
		if err := json.Unmarshal(out, &back); err != nil {
			b.Fatal(err)
		}
		p := params
		p.Messages = back
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}
