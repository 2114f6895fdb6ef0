package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
)

// shortResults is an Engine that replaces every tool result by a short
// note; a real one is proxy.NewPipelineEngine.
type shortResults struct{}

func (shortResults) Prepare(_ context.Context, req *proxy.Request) (*proxy.Prepared, error) {
	msgs := agentctx.MapToolResults(req.Document.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		return agentctx.Text("[elided]"), r.Content.Chars() > 10
	})
	return &proxy.Prepared{Messages: msgs}, nil
}

func (shortResults) Observe(_ context.Context, session string, u pricing.Usage, counted int) {}

// The proxy in front of an upstream: the request the upstream receives is
// the client's, with only the edited value changed.
func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Printf("upstream got %s %s\n%s\n", r.Method, r.URL.Path, b)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"done"}]}`)
	}))
	defer upstream.Close()

	srv, err := proxy.New(proxy.Options{Engine: shortResults{}, AnthropicURL: upstream.URL})
	if err != nil {
		panic(err)
	}
	front := httptest.NewServer(srv)
	defer front.Close()

	body := `{"model":"m","messages":[{"role":"user","content":"ls"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a very long listing"}]}],"custom":1}`
	resp, err := http.Post(front.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Printf("client got %d %s\n", resp.StatusCode, answer)
	// Output:
	// upstream got POST /v1/messages
	// {"model":"m","messages":[{"role":"user","content":"ls"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[elided]"}]}],"custom":1}
	// client got 200 {"type":"message","content":[{"type":"text","text":"done"}]}
}
