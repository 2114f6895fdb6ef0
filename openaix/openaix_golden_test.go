package openaix_test

// Golden transcripts of the OpenAI SDK middleware (Chat Completions):
// scripted sessions (enginetest.Script's, so a change there changes these)
// go through the middleware over a pipeline, and each step's transcript
// (testdata/golden/openaix/*.txt) holds the bytes it sent upstream and the
// session state as stored after it. Regenerate after an intended change of
// behaviour with
//
//	go test ./openaix -run TestGolden -update
//
// Nothing in the bytes is normalized: the pipeline runs on a step clock,
// over a fixed directory, with the extractive summarizer (see
// internal/testkit/golden).

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/golden"
	"github.com/agentctx/agentctx/openaix"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/proxy/enginetest"
)

// goldenReply is the upstream's answer to a request of the bytes sent: its
// usage counts a token per four bytes, most of them cached.
func goldenReply(sent []byte) []byte {
	n := len(sent) / 4
	return fmt.Appendf(nil, `{"id":"chatcmpl-golden","object":"chat.completion","created":1772614800,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":5,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`, n, n+5, n-n/10)
}

func goldenSteps(key string) []golden.Step {
	var out []golden.Step
	script := enginetest.Script(proxy.APIChat, key, 12, 1200)
	body := func(items [][]byte) []byte {
		var msgs []string
		for _, it := range items {
			msgs = append(msgs, string(it))
		}
		return fmt.Appendf(nil, `{"model":"gpt-5","messages":[{"role":"system","content":"You are a coding agent."},%s],"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}]}`, strings.Join(msgs, ","))
	}
	for i, r := range script {
		out = append(out, golden.Step{Label: fmt.Sprintf("turn %d", i), Body: body(r.Items)})
	}
	// Retries of earlier requests (turn 6 compacts in the compaction
	// runs: turn 5 is behind it), then the client edits its first
	// message.
	for _, k := range []int{5, 6} {
		out = append(out, golden.Step{Label: fmt.Sprintf("retry of turn %d, after later turns", k), Body: body(script[k].Items)})
	}
	last := script[len(script)-1].EditFirstText("Find why the tests fail and fix them.")
	out = append(out, golden.Step{Label: "the client edits its first message", Body: body(last.Items)})
	return out
}

func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int
		clock func(int) time.Duration
	}{
		{"clearing", 5000, func(s int) time.Duration { return time.Duration(6 * s) }},
		{"compaction", 2500, func(s int) time.Duration { return time.Duration(s) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sdk := golden.SDK{
				Name: "openaix-" + c.name, Title: "openaix middleware (Chat Completions), " + c.name,
				URL: "https://api.openai.com/v1/chat/completions", Steps: goldenSteps("golden-" + c.name),
				Limit: c.limit, Inline: 3000, Clock: c.clock, Reply: goldenReply,
				New: func(p *pipeline.Pipeline) golden.Middleware {
					mw := openaix.Middleware(p, openaix.Options{})
					return func(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
						return mw(r, next)
					}
				},
			}
			golden.Check(t, "openaix/"+c.name+".txt", sdk.Run(t))
		})
	}
}
