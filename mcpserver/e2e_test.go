package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/internal/testkit/testbin"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
)

// The MCP names Claude Code gives the read-back tools of a server named
// agentctx.
const (
	mcpByID    = "mcp__agentctx__" + workspace.ToolGetKnowledgeByID
	mcpByLines = "mcp__agentctx__" + workspace.ToolGetKnowledgeByLines
	mcpGrep    = "mcp__agentctx__" + workspace.ToolGrepKnowledge
)

// e2eOriginal is a tool result of about 60,000 characters, over one page
// (so that reading it whole takes the notice's offset), with non-ASCII
// text so that character and byte offsets differ.
func e2eOriginal() string {
	var b strings.Builder
	for i := 1; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "line %04d: naïve café ✓ value=%d checksum=%x\n", i, i*i, i*7919)
	}
	return b.String()
}

var continueByID = regexp.MustCompile(`Continue with get_knowledge_by_id\(artifact_id="[^"]*", offset=([0-9]+)\)`)

// TestClaudeCodeReadBack runs the real Claude Code with `agentctx mcp` as
// an MCP server (a temporary --mcp-config) against the fake upstream,
// whose scripted model reads an offloaded tool result back through
// mcp__agentctx__ tools: the whole artifact page by page with
// get_knowledge_by_id, following the notice's offset, then a range of
// lines with get_knowledge_by_lines. The tool results the upstream
// received must be the original text, byte for byte.
func TestClaudeCodeReadBack(t *testing.T) {
	clients := e2eclient.Install(t)

	// A workspace holding the original as session s1's offloaded result;
	// agentctx mcp is registered as the README shows, without the session.
	wsDir := filepath.Join(t.TempDir(), "ws")
	store, err := dirstore.Open(wsDir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	original := e2eOriginal()
	ws := workspace.New(store, workspace.Options{SessionID: "s1"})
	_, off, err := ws.OffloadToolResult(t.Context(), workspace.ToolCall{ID: "toolu_e2e_1", Name: "Bash"}, agentctx.Text(original))
	if err != nil {
		t.Fatal(err)
	}
	id := off.ID
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(original, "\n")
	const firstLine, lastLine = 101, 300
	wantLines := fmt.Sprintf("Lines %d-%d of %d\n", firstLine, lastLine, len(lines)-1) +
		strings.TrimSuffix(strings.Join(lines[firstLine-1:lastLine], ""), "\n")

	bin := testbin.Agentctx(t)
	config := filepath.Join(t.TempDir(), "mcp.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"agentctx": map[string]any{
		"command": bin, "args": []string{"mcp", "--workspace", wsDir}}}})
	if err := os.WriteFile(config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	// The model: page through the artifact by id, then read a range of
	// lines, then answer. It records the tool results it receives.
	var (
		mu       sync.Mutex
		pages    []string // results of get_knowledge_by_id, in order
		byLines  string   // result of get_knowledge_by_lines
		sawTools []string // tool names of the first model request
		deferred []string // mcp__agentctx__ tools marked defer_loading
		phase    int      // 0: paging by id, 1: lines asked, 2: done
	)
	script := func(c *fakeupstream.Call) fakeupstream.Reply {
		mu.Lock()
		defer mu.Unlock()
		hasByID := false
		for _, n := range c.ToolNames {
			hasByID = hasByID || n == mcpByID
		}
		if !hasByID {
			return fakeupstream.Reply{Text: "ok"} // not the agent's loop (a title, a check)
		}
		if sawTools == nil {
			sawTools = append([]string{}, c.ToolNames...)
			for _, tv := range c.Body["tools"].([]any) {
				tm, _ := tv.(map[string]any)
				if name, _ := tm["name"].(string); strings.HasPrefix(name, "mcp__agentctx__") && tm["defer_loading"] == true {
					deferred = append(deferred, name)
				}
			}
		}
		if c.Turn == 0 {
			return fakeupstream.Reply{Text: "Reading the artifact back.", ToolCalls: []fakeupstream.ToolCall{
				{Name: mcpByID, Input: map[string]any{"artifact_id": id}}}}
		}
		if len(c.Results) == 0 {
			return fakeupstream.Reply{Text: "FAILED: no tool result"}
		}
		last := c.Results[len(c.Results)-1]
		switch phase {
		case 0:
			pages = append(pages, last)
			if m := continueByID.FindStringSubmatch(last); m != nil && len(pages) < 10 {
				offset, _ := strconv.Atoi(m[1])
				return fakeupstream.Reply{Text: "Reading on.", ToolCalls: []fakeupstream.ToolCall{
					{Name: mcpByID, Input: map[string]any{"artifact_id": id, "offset": offset}}}}
			}
			phase = 1
			return fakeupstream.Reply{Text: "Now a range of lines.", ToolCalls: []fakeupstream.ToolCall{
				{Name: mcpByLines, Input: map[string]any{"artifact_id": id, "start_line": firstLine, "end_line": lastLine}}}}
		case 1:
			byLines = last
			phase = 2
			return fakeupstream.Reply{Text: "READ BACK DONE"}
		}
		return fakeupstream.Reply{Text: "READ BACK DONE"}
	}
	fake := fakeupstream.New(fakeupstream.Options{Script: script})
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)

	home, work := t.TempDir(), t.TempDir()
	argv := append(e2eclient.ClaudeCommand(clients), "-p", "Read the artifact "+id+" back with the agentctx tools.",
		"--mcp-config", config, "--strict-mcp-config",
		"--allowedTools", strings.Join([]string{mcpByID, mcpByLines, mcpGrep}, " "),
		"--output-format", "json")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+home, "ANTHROPIC_BASE_URL="+up.URL, "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if dump := os.Getenv("AGENTCTX_E2E_DUMP"); dump != "" {
		for i, r := range fake.Records() {
			os.WriteFile(filepath.Join(dump, fmt.Sprintf("%s-req%02d.json", t.Name(), i)), r.Body, 0o644)
		}
	}
	for _, r := range fake.Records() {
		if r.Rejected != "" {
			t.Errorf("the upstream rejected a request (%s): %s", r.Path, r.Rejected)
		}
	}
	if runErr != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", runErr, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	var res struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(e2eclient.LastJSONLine(stdout.Bytes()), &res); err != nil {
		t.Fatalf("claude output is not JSON: %v\n%s", err, e2eclient.Tail(stdout.String()))
	}
	if res.IsError || !strings.Contains(res.Result, "READ BACK DONE") {
		t.Errorf("claude result = %q (is_error %v), want it to contain %q", res.Result, res.IsError, "READ BACK DONE")
	}

	mu.Lock()
	defer mu.Unlock()
	// The MCP tools reached the model up front: alwaysLoad kept them out
	// of the tool search.
	if sawTools == nil {
		t.Fatalf("no model request offered %s (alwaysLoad not honoured?)", mcpByID)
	}
	for _, want := range []string{mcpByLines, mcpGrep} {
		if !contains(sawTools, want) {
			t.Errorf("the model request's tools %v lack %s", sawTools, want)
		}
	}
	if len(deferred) > 0 {
		t.Errorf("tools %v were deferred behind the tool search", deferred)
	}
	// Paging by id gives the original back, byte for byte.
	if len(pages) < 2 {
		t.Fatalf("%d pages read by id; want the artifact over at least two pages", len(pages))
	}
	var whole strings.Builder
	for i, p := range pages {
		body := p
		if i < len(pages)-1 {
			k := strings.LastIndex(p, "\n\n[Read limit")
			if k < 0 {
				t.Fatalf("page %d has no read-on notice:\n%s", i+1, e2eclient.Tail(p))
			}
			body = p[:k] + "\n" // the page ends with a whole line, whose "\n" the notice's blank line replaced
		}
		whole.WriteString(body)
	}
	if got := whole.String(); got != original {
		t.Errorf("the pages the upstream received (%d bytes over %d pages) are not the original (%d bytes); first difference at byte %d",
			len(got), len(pages), len(original), firstDiff(got, original))
	}
	if byLines != wantLines {
		t.Errorf("get_knowledge_by_lines result (%d bytes) is not lines %d-%d of the original (%d bytes); first difference at byte %d",
			len(byLines), firstLine, lastLine, len(wantLines), firstDiff(byLines, wantLines))
	}
	t.Logf("claude read %d characters back over %d pages and %d bytes of lines", len(original), len(pages), len(byLines))
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
