package openaix_test

// Golden transcripts of the OpenAI SDK middleware on the Responses API:
// the Responses form of enginetest.Script's sessions (the proxy's golden
// sessions) go through the middleware over a pipeline, and each step's
// transcript (testdata/golden/openaix/responses-*.txt) holds the bytes
// it sent upstream and the session state as stored after it. The native
// run's upstream answers the compaction requests (POST
// /v1/responses/compact) with a fixed compaction item. Regenerate after
// an intended change of behaviour with
//
//	go test ./openaix -run TestGoldenResponses -update

import (
	"bytes"
	"encoding/json"
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

// goldenResponsesReply answers a request of the bytes sent: a Responses
// answer whose usage counts a token per four bytes, most of them cached,
// or, for a compaction request (no "store" member: the middleware's
// compaction body is model and input), a compacted window.
func goldenResponsesReply(sent []byte) []byte {
	n := len(sent) / 4
	if !bytes.Contains(sent, []byte(`"store"`)) {
		// The user messages of the input, then the compaction item.
		var req struct {
			Input []json.RawMessage `json:"input"`
		}
		json.Unmarshal(sent, &req)
		var out []string
		for _, it := range req.Input {
			var m struct{ Role string }
			if json.Unmarshal(it, &m) == nil && m.Role == "user" {
				out = append(out, string(it))
			}
		}
		out = append(out, fmt.Sprintf(`{"type":"compaction","id":"cmp_golden_%d","encrypted_content":"golden-opaque-%d"}`, n, n))
		return fmt.Appendf(nil, `{"id":"cmp_golden","object":"response.compaction","created_at":1772614800,"output":[%s],"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}}`, strings.Join(out, ","), n, n+300)
	}
	return fmt.Appendf(nil, `{"id":"resp_golden","object":"response","created_at":1772614800,"status":"completed","model":"gpt-5","output":[{"type":"message","id":"msg_golden","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}}`, n, n-n/10, n+5)
}

func goldenResponsesSteps(key string) []golden.Step {
	var out []golden.Step
	script := enginetest.Script(proxy.APIResponses, key, 12, 1200)
	body := func(items [][]byte) []byte {
		var its []string
		for _, it := range items {
			its = append(its, string(it))
		}
		return fmt.Appendf(nil, `{"model":"gpt-5","store":false,"instructions":"You are a coding agent.","input":[%s],"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`, strings.Join(its, ","))
	}
	for i, r := range script {
		out = append(out, golden.Step{Label: fmt.Sprintf("turn %d", i), Body: body(r.Items)})
	}
	for _, k := range []int{5, 6} {
		out = append(out, golden.Step{Label: fmt.Sprintf("retry of turn %d, after later turns", k), Body: body(script[k].Items)})
	}
	last := script[len(script)-1].EditFirstText("Find why the tests fail and fix them.")
	out = append(out, golden.Step{Label: "the client edits its first message", Body: body(last.Items)})
	// A request whose history the server keeps goes as it came.
	out = append(out, golden.Step{Label: "a request chained with previous_response_id",
		Body: []byte(`{"model":"gpt-5","previous_response_id":"resp_golden","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Go on."}]}]}`)})
	return out
}

func TestGoldenResponses(t *testing.T) {
	for _, c := range []struct {
		name   string
		limit  int
		clock  func(int) time.Duration
		native bool
	}{
		{"clearing", 5000, func(s int) time.Duration { return time.Duration(6 * s) }, false},
		{"compaction", 2500, func(s int) time.Duration { return time.Duration(s) }, false},
		{"native", 2500, func(s int) time.Duration { return time.Duration(s) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sdk := golden.SDK{
				Name: "openaix-responses-" + c.name, Title: "openaix middleware (Responses), " + c.name,
				URL: "https://api.openai.com/v1/responses", Steps: goldenResponsesSteps("golden-" + c.name),
				Limit: c.limit, Inline: 3000, Clock: c.clock, Reply: goldenResponsesReply,
				New: func(p *pipeline.Pipeline) golden.Middleware {
					mw := openaix.Middleware(p, openaix.Options{})
					if c.native {
						mw = openaix.NativeMiddleware(p, openaix.Options{})
					}
					return func(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
						if c.native {
							r.Header.Set("Authorization", "Bearer sk-golden")
						}
						return mw(r, next)
					}
				},
			}
			if c.native {
				sdk.Options = func(o *pipeline.Options) {
					o.Compact.Summarizer = openaix.NativeSummarizer(openaix.NativeSummarizerOptions{})
					// The golden pins the provider compaction's wire form,
					// at the threshold, as the offline summarizer of the
					// other scenarios compacts: not where the priced trigger
					// puts it.
					o.Trigger = pipeline.TriggerThreshold
				}
			}
			golden.Check(t, "openaix/responses-"+c.name+".txt", sdk.Run(t))
		})
	}
}
