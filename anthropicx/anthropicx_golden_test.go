package anthropicx_test

// Golden transcripts of the Anthropic SDK middleware: scripted sessions
// (enginetest.Script's, so a change there changes these) go through the
// middleware over a pipeline, and each step's transcript
// (testdata/golden/anthropicx/*.txt) holds the bytes it sent upstream and
// the session state as stored after it. Regenerate after an intended
// change of behaviour with
//
//	go test ./anthropicx -run TestGolden -update
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

	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/internal/testkit/golden"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/proxy/enginetest"
)

// goldenReply is the upstream's answer to a request of the bytes sent: its
// usage counts a token per four bytes, most of them read from the cache.
func goldenReply(sent []byte) []byte {
	n := len(sent) / 4
	return fmt.Appendf(nil, `{"id":"msg_golden","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":0,"output_tokens":5}}`, n/10, n-n/10)
}

func goldenSteps(key string, thinking bool) []golden.Step {
	var out []golden.Step
	script := enginetest.Script(proxy.APIAnthropic, key, 12, 1200)
	body := func(items [][]byte) []byte {
		th := ""
		if thinking {
			th = `"thinking":{"type":"enabled","budget_tokens":2048},`
		}
		var msgs []string
		for i, it := range items {
			s := string(it)
			if thinking && strings.HasPrefix(s, `{"role":"assistant","content":[`) {
				s = fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":"Step %d: the next package to test.","signature":"golden-sig-%03d"},`, i, i) + strings.TrimPrefix(s, `{"role":"assistant","content":[`)
			}
			msgs = append(msgs, s)
		}
		return fmt.Appendf(nil, `{"model":"claude-sonnet-4-5","max_tokens":4096,%s"system":"You are a coding agent.","tools":[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],"messages":[%s]}`, th, strings.Join(msgs, ","))
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
		name     string
		limit    int
		clock    func(int) time.Duration
		thinking bool
	}{
		{"clearing", 5000, func(s int) time.Duration { return time.Duration(6 * s) }, false},
		{"compaction", 2500, func(s int) time.Duration { return time.Duration(s) }, false},
		{"thinking-compaction", 2500, func(s int) time.Duration { return time.Duration(s) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sdk := golden.SDK{
				Name: "anthropicx-" + c.name, Title: "anthropicx middleware, " + c.name,
				URL: "https://api.anthropic.com/v1/messages", Steps: goldenSteps("golden-"+c.name, c.thinking),
				Limit: c.limit, Inline: 3000, Clock: c.clock, Reply: goldenReply,
				New: func(p *pipeline.Pipeline) golden.Middleware {
					mw := anthropicx.Middleware(p, anthropicx.Options{})
					return func(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
						return mw(r, next)
					}
				},
			}
			golden.Check(t, "anthropicx/"+c.name+".txt", sdk.Run(t))
		})
	}
}
