package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// readBackModel is a scripted model that, offered the proxy's read-back
// tool query_artifacts (under whatever name the client gives MCP tools),
// calls it once and then answers with what it returned.
type readBackModel struct {
	mu      sync.Mutex
	offered []string // the tool names of the requests that offered it
	result  string   // the tool's result, as the client sent it back
	// namespaced: a request offered the tools in the namespace
	// mcp__agentctx (Codex).
	namespaced bool
}

const launchDone = "LAUNCH_DONE"

func (m *readBackModel) script(c *fakeupstream.Call) fakeupstream.Reply {
	tool := ""
	for _, n := range c.ToolNames {
		if strings.HasSuffix(n, "query_artifacts") {
			tool = n
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if tool == "" && bytes.Contains(c.Raw, []byte(`"type":"namespace","name":"mcp__agentctx"`)) && bytes.Contains(c.Raw, []byte(`"name":"query_artifacts"`)) {
		// Codex offers an MCP server's tools as a namespace, listed from
		// the server; a call to one must name its namespace, which the
		// fake upstream cannot yet: the model answers.
		m.namespaced = true
		return fakeupstream.Reply{Text: launchDone}
	}
	if tool == "" {
		return fakeupstream.Reply{Text: "ok"}
	}
	m.offered = c.ToolNames
	if c.Turn == 0 {
		return fakeupstream.Reply{ToolCalls: []fakeupstream.ToolCall{{Name: tool, Input: map[string]any{}}}}
	}
	if len(c.Results) > 0 {
		m.result = c.Results[len(c.Results)-1]
	}
	return fakeupstream.Reply{Text: launchDone + " " + m.result}
}

// clientBin writes an executable named name that runs argv with its
// arguments, in a new directory for PATH.
func clientBin(t *testing.T, name string, argv []string) string {
	t.Helper()
	dir := t.TempDir()
	var q []string
	for _, a := range argv {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	script := "#!/bin/sh\nexec " + strings.Join(q, " ") + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runAgentctx runs the built agentctx with env and args, for at most 3
// minutes, and returns its exit code, stdout and stderr.
func runAgentctx(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentctxBinary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func checkUpstream(t *testing.T, fake *fakeupstream.Server) {
	t.Helper()
	recs := fake.Records()
	if len(recs) == 0 {
		t.Fatal("the fake upstream saw no request: the client did not go through the proxy")
	}
	for _, r := range recs {
		if r.Rejected != "" {
			t.Errorf("the upstream rejected a request (%s): %s", r.Path, r.Rejected)
		}
	}
}

func (m *readBackModel) check(t *testing.T, final string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.offered == nil {
		t.Fatalf("no request offered the read-back tool query_artifacts: the MCP server was not registered")
	}
	// query_artifacts on an empty workspace lists nothing: "[]".
	if !strings.HasPrefix(strings.TrimSpace(m.result), "[") || !strings.Contains(final, launchDone) {
		t.Errorf("the read-back tool's result reached the model as %q; the client's answer %q", m.result, final)
	}
}

// agentctx claude runs the real Claude Code through its proxy against the
// fake upstream: the requests reach the upstream, the read-back tool is
// offered and answers through the proxy's /mcp, the client's answer comes
// back, and its exit code is agentctx's (a failing client's too).
func TestLaunchClaudeCodeE2E(t *testing.T) {
	t.Parallel() // child processes only (go, agentctx, the client), its own directories and upstream: it overlaps the other client runs
	clients := e2eclient.Install(t)
	model := &readBackModel{}
	fake := fakeupstream.New(fakeupstream.Options{Script: model.script})
	up := httptest.NewServer(fake)
	defer up.Close()
	bin := clientBin(t, "claude", e2eclient.ClaudeCommand(clients))
	env := append(e2eclient.MinimalEnv(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+t.TempDir(), "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")

	code, stdout, stderr := runAgentctx(t, env, "claude", "--upstream-anthropic", up.URL, "-p", "List the stored artifacts.", "--output-format", "json")
	if code != 0 {
		t.Fatalf("agentctx claude: exit %d\nstdout: %s\nstderr: %s", code, e2eclient.Tail(stdout), e2eclient.Tail(stderr))
	}
	var res struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(e2eclient.LastJSONLine([]byte(stdout)), &res); err != nil || res.IsError {
		t.Fatalf("claude's output: %v %+v\n%s", err, res, e2eclient.Tail(stdout))
	}
	checkUpstream(t, fake)
	model.check(t, res.Result)

	// A failing client: its exit code, nothing added by agentctx.
	code, _, stderr = runAgentctx(t, env, "claude", "--upstream-anthropic", up.URL, "-p", "hi", "--output-format", "no-such-format")
	if code == 0 || strings.Contains(stderr, "agentctx: the client") {
		t.Errorf("a failing claude: exit %d, stderr %s", code, stderr)
	}
	if want := claudeExit(t, clients, env); code != want {
		t.Errorf("a failing claude through agentctx exits %d; claude alone %d", code, want)
	}
}

// claudeExit is the exit code of the same failing command line run
// directly.
func claudeExit(t *testing.T, clients string, env []string) int {
	argv := append(e2eclient.ClaudeCommand(clients), "-p", "hi", "--output-format", "no-such-format")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(env, "ANTHROPIC_BASE_URL=http://127.0.0.1:9")
	cmd.Dir = t.TempDir()
	cmd.Run()
	return cmd.ProcessState.ExitCode()
}

// agentctx codex runs the real Codex the same way: its requests reach the
// upstream through the proxy, with the read-back tools it listed from the
// proxy's /mcp (Codex offers them as the namespace mcp__agentctx), and
// its exit code is agentctx's. (A call to a namespaced tool needs the fake
// upstream to emit a function call with its namespace: not yet.)
func TestLaunchCodexE2E(t *testing.T) {
	t.Parallel() // child processes only (go, agentctx, the client), its own directories and upstream: it overlaps the other client runs
	clients := e2eclient.Install(t)
	bin := clientBin(t, "codex", e2eclient.CodexCommand(clients))
	home := t.TempDir()
	env := append(e2eclient.MinimalEnv(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+home, "CODEX_HOME="+home, "OPENAI_API_KEY=dummy")
	// With --tenants and --token, Codex's MCP client sends the proxy's
	// token in its own header and the model requests' key as the bearer
	// token (issue 49: it sent only the token, as the bearer, and the
	// tools were not listed, or their read-back refused).
	for _, flags := range [][]string{nil, {"--tenants", "--token", "e2e-token-1234"}} {
		model := &readBackModel{}
		fake := fakeupstream.New(fakeupstream.Options{Script: model.script})
		up := httptest.NewServer(fake)
		defer up.Close()
		args := append(append([]string{"codex", "--upstream-openai", up.URL}, flags...), "--",
			"-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false", "-m", "fake-codex-model",
			"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "List the stored artifacts.")
		code, stdout, stderr := runAgentctx(t, env, args...)
		if code != 0 {
			t.Fatalf("agentctx codex %q: exit %d\nstdout: %s\nstderr: %s", flags, code, e2eclient.Tail(stdout), e2eclient.Tail(stderr))
		}
		checkUpstream(t, fake)
		model.mu.Lock()
		if !model.namespaced || !strings.Contains(stdout, launchDone) {
			t.Errorf("%q: no request offered the read-back tools (namespace mcp__agentctx, listed from the proxy's /mcp), or the answer %q did not come back\nstderr: %s",
				flags, stdout, e2eclient.Tail(stderr))
		}
		model.mu.Unlock()
	}

	code, _, _ := runAgentctx(t, env, "codex", "--upstream-openai", "http://127.0.0.1:9", "--", "exec", "--no-such-flag")
	if code != 2 {
		t.Errorf("a failing codex (an unknown flag, exit 2 by itself): exit %d", code)
	}
}
