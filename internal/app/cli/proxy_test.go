package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

func TestProxyBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--listen", "not-an-address:x:y"},
		{"proxy", "--upstream-anthropic", "ftp://example.com"},
		{"proxy", "--limit", "0"},
		{"proxy", "--max-sessions", "0"},
		{"proxy", "--decode-cache", "-1"},
		{"proxy", "--session-memory", "-1"},
		{"proxy", "--upstream-timeout", "-1s"},
		{"proxy", "--upstream-idle-timeout", "-1s"},
		{"proxy", "--client-header-timeout", "-1s"},
		{"proxy", "--client-body-timeout", "-1s"},
		{"proxy", "--client-idle-timeout", "-1s"},
		{"proxy", "--upstream-timeout", "soon"},
		{"proxy", "--clock-speed", "0"},
		{"proxy", "--clock-speed", "60", "--now", "2026-01-01T00:00:00Z"},
		{"proxy", "extra-arg"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr", args, code, out, errs)
		}
	}
}

// --clock-speed is for simulations: it works but --help does not list it.
func TestProxyClockSpeedHidden(t *testing.T) {
	_, out, _ := runCLI(t, "", "proxy", "--help")
	if !strings.Contains(out, "--upstream-anthropic") || strings.Contains(out, "clock-speed") {
		t.Errorf("proxy --help lists --clock-speed, or is not the help:\n%s", out)
	}
}

// The proxy runs until its context is done, prints the base URL first, and
// forwards to the upstream.
func TestProxyServesUntilCancelled(t *testing.T) {
	up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		code := cli.Run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", up.URL, "--upstream-openai", up.URL,
			"--workspace", dir + "/ws", "--dir", dir + "/archive"}, cli.Streams{In: strings.NewReader(""), Out: pw, Err: &lockedBuffer{b: &errb}})
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q", line)
	}
	go io.Copy(io.Discard, pr)
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Errorf("through the proxy: %d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != cli.ExitInterrupted {
			t.Errorf("exit %d after cancel, want %d", code, cli.ExitInterrupted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not stop after its context was cancelled")
	}
	if want := "claude --add-dir " + dir + "/ws\n"; !strings.Contains(errb.String(), want) {
		t.Errorf("the banner does not say %q:\n%s", want, errb.String())
	}
	if want := "dashboard at " + base + "/agentctx/\n"; !strings.Contains(errb.String(), want) {
		t.Errorf("the banner does not say %q:\n%s", want, errb.String())
	}
}

// lockedBuffer is a buffer safe for the proxy's concurrent log writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProxyServesMCP: agentctx proxy prints the line that registers its
// /mcp with Claude Code, with its real port, and an MCP client of the
// official SDK at that URL lists the read-back tools and reads what the
// proxy stored for a conversation whose session it never names.
func TestProxyServesMCP(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	up := httptest.NewServer(fake)
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	errb := &lockedBuffer{b: &bytes.Buffer{}}
	done := make(chan int)
	go func() {
		code := cli.Run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", up.URL, "--upstream-openai", up.URL,
			"--workspace", dir + "/ws", "--dir", dir + "/archive"}, cli.Streams{In: strings.NewReader(""), Out: pw, Err: errb})
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	want := "claude mcp add --transport http agentctx " + base + "/mcp"
	var printed bool
	for range 100 { // the line follows the first one on stderr
		if printed = slices.Contains(strings.Split(errb.String(), "\n"), want); printed {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !printed {
		t.Fatalf("stderr lacks the line %q:\n%s", want, errb.String())
	}

	big := strings.Repeat("row of a large tool result\n", 2_000) // 54,000 characters: offloaded
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_big","name":"Bash","input":{"command":"cat big"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_big","content":` + strconv.Quote(big) + `}]}]}`
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if recs := fake.Records(); resp.StatusCode != 200 || len(recs) != 1 || !strings.Contains(string(recs[0].Body), `tool_result_toolu_big`) {
		t.Fatalf("through the proxy: %d; the upstream got no reference", resp.StatusCode)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: strings.TrimPrefix(want, "claude mcp add --transport http agentctx ")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools/list: %v, %v", tools, err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "grep_knowledge",
		Arguments: map[string]any{"artifact_id": "tool_result_toolu_big", "pattern": "row", "max_results": 1}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "1:row of a large tool result\n\n"+
		"[Showing the first 1 of 2,000 matching lines (max_results=1). Narrow the pattern or raise max_results to see more.]" {
		t.Errorf("read back over /mcp: %v %+v", err, res)
	}

	cancel()
	select {
	case code := <-done:
		if code != cli.ExitInterrupted {
			t.Errorf("exit %d after cancel, want %d", code, cli.ExitInterrupted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not stop with an MCP client connected")
	}
}

// The proxy logs a line per request; the workspace's line per stored tool
// result is debug detail, printed with -v only.
func TestProxyStoredResultLogIsDebug(t *testing.T) {
	for _, tc := range []struct {
		verbose bool
		want    string // in the log of a request with a large result
	}{
		{false, ""},
		{true, `level=DEBUG msg="workspace: tool result offloaded"`},
	} {
		up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
		defer up.Close()
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(t.Context())
		pr, pw := io.Pipe()
		errb := &lockedBuffer{b: &bytes.Buffer{}}
		args := []string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", up.URL, "--workspace", dir + "/ws", "--dir", dir + "/archive"}
		if tc.verbose {
			args = append(args, "-v")
		}
		done := make(chan int)
		go func() {
			done <- cli.Run(ctx, args, cli.Streams{In: strings.NewReader(""), Out: pw, Err: errb})
			pw.Close()
		}()
		line, err := bufio.NewReader(pr).ReadString('\n')
		if err != nil {
			cancel()
			t.Fatalf("no first line: %v", err)
		}
		go io.Copy(io.Discard, pr)
		base := strings.TrimPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
		big := strings.Repeat("row of a large tool result\n", 2_000)
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_big","name":"Bash","input":{"command":"cat big"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_big","content":` + strconv.Quote(big) + `}]}]}`
		resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		<-done
		log := errb.String()
		if !strings.Contains(log, `msg="proxy: request"`) {
			t.Errorf("verbose %v: no request line in the log:\n%s", tc.verbose, log)
		}
		if got := strings.Contains(log, "tool result offloaded"); got != (tc.want != "") || tc.want != "" && !strings.Contains(log, tc.want) {
			t.Errorf("verbose %v: the stored result's line: want %q in the log:\n%s", tc.verbose, tc.want, log)
		}
	}
}

// --upstream-timeout bounds the wait for a hung upstream's answer
// headers: the client gets 504 (issue 49: a hung upstream held a request
// 100 s).
func TestProxyUpstreamTimeout(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		code := cli.Run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", up.URL, "--upstream-timeout", "300ms",
			"--workspace", dir + "/ws", "--dir", dir + "/archive"}, cli.Streams{In: strings.NewReader(""), Out: pw, Err: &lockedBuffer{b: &errb}})
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	base, _ := strings.CutPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	go io.Copy(io.Discard, pr)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second) // far above the timeout
	defer rcancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer within the client's budget: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("status %d, want 504: %s", resp.StatusCode, b)
	}
	cancel()
	<-done
}
