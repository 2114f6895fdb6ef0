package proxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
)

// serveProxy runs a proxy with opts on a loopback listener until the test
// ends and returns its base URL and a function that stops it.
func serveProxy(t *testing.T, opts proxy.Options) (string, func() error) {
	t.Helper()
	srv, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var (
		once     sync.Once
		serveErr error
	)
	stop := func() error {
		cancel()
		once.Do(func() {
			select {
			case serveErr = <-done:
			case <-time.After(10 * time.Second):
				serveErr = errors.New("the proxy did not stop")
			}
		})
		return serveErr
	}
	t.Cleanup(func() { stop() })
	return "http://" + ln.Addr().String(), stop
}

// TestMCPEndpoint: an MCP client of the official SDK, over streamable
// HTTP at the proxy's own /mcp, lists the read-back tools and reads what
// the proxy stored for a session the client never names; an open MCP
// stream does not hold the proxy's shutdown.
func TestMCPEndpoint(t *testing.T) {
	store, err := dirstore.Open(filepath.Join(t.TempDir(), "ws"), dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	engine := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{Store: store,
		Workspace: workspace.Options{InlineLimit: 1000}}})
	fake := fakeupstream.New(fakeupstream.Options{})
	up := httptest.NewServer(fake)
	defer up.Close()
	mcpSrv := mcpserver.New(store, mcpserver.Options{}) // the namespace the engine writes to, every session
	base, stop := serveProxy(t, proxy.Options{Engine: engine, AnthropicURL: up.URL, OpenAIURL: up.URL, Logger: testLogger(t),
		MCP: mcpSrv.Handler()})

	// A conversation whose session only the proxy knows (a hash of its
	// start): its large tool result is offloaded.
	resp := post(t, base+"/v1/messages", toolTurns(1, 5000), nil)
	io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("through the proxy: %d", resp.StatusCode)
	}
	recs := fake.Records()
	if len(recs) != 1 || !strings.Contains(string(recs[0].Body), `<knowledge id=\"tool_result_t0\"`) {
		t.Fatalf("the upstream did not get a reference to tool_result_t0")
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + proxy.MCPPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != len(workspace.Tools()) {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: workspace.ToolGetKnowledgeByLines,
		Arguments: map[string]any{"artifact_id": "tool_result_t0", "start_line": 1, "end_line": 2}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("read back: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "Lines 1-2 of 714\nline 0\nline 0" {
		t.Errorf("read back %q", got)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: workspace.ToolGetToolResultOffloadInfo})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"artifact_id":"tool_result_t0"`) {
		t.Errorf("listing: %v %+v", err, res)
	}
	if n := len(fake.Records()); n != 1 {
		t.Errorf("%d requests reached the upstream, want the one model request", n)
	}

	// The client's standing stream ends with the proxy.
	start := time.Now()
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v with an MCP client connected", d)
	}
}

// Without an MCP handler, /mcp is answered by the proxy, never forwarded.
func TestMCPPathNotForwarded(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, nil)
	for _, path := range []string{"/mcp", "/mcp/x"} {
		resp := post(t, base+path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
		io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", path, resp.StatusCode)
		}
	}
	if n := len(fake.Records()); n != 0 {
		t.Errorf("%d requests to /mcp reached the upstream", n)
	}
}
