package cli_test

import (
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
)

func TestOwnsSignals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"claude"}, true},
		{[]string{"codex", "exec", "hi"}, true},
		{[]string{"-v", "claude", "-p", "hi"}, true},
		{[]string{"proxy"}, false},
		{[]string{"mcp", "--http", ":0"}, false},
		{[]string{"count", "x.json"}, false},
		{nil, false},
		{[]string{"nonsense"}, false},
	} {
		if got := cli.TraitsOf(tc.args).OwnsSignals; got != tc.want {
			t.Errorf("OwnsSignals(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// fakeClient writes an executable named name into a new directory: a
// shell script that records its arguments and ANTHROPIC_BASE_URL in $OUT,
// one a line, then runs body.
func fakeClient(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$OUT\"\necho \"base=$ANTHROPIC_BASE_URL\" >> \"$OUT\"\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runLaunch runs the built agentctx with the fake client's directory first
// on PATH, and returns its exit code, stderr and what the client recorded.
func runLaunch(t *testing.T, clientDir string, env []string, args ...string) (int, string, []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.CommandContext(t.Context(), agentctxBinary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(e2eclient.MinimalEnv(), "PATH="+clientDir+":"+os.Getenv("PATH"), "HOME="+cmd.Dir, "OUT="+out), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	b, _ := os.ReadFile(out)
	return cmd.ProcessState.ExitCode(), stderr.String(), strings.Split(strings.TrimSpace(string(b)), "\n")
}

// agentctx claude: its own flags first, the rest to the client unchanged
// after the proxy's; the client's exit code is agentctx's, with nothing
// added to stderr but the line that says where the proxy is and the
// summary when the client exits.
func TestLaunchCommand(t *testing.T) {
	dir := fakeClient(t, "claude", `exit "${FAKE_EXIT:-0}"`)
	for _, tc := range []struct {
		name       string
		env        []string
		args       []string
		code       int
		clientArgs []string
	}{
		{"flags then the client's", nil, []string{"claude", "--limit", "50000", "--upstream-anthropic", "http://127.0.0.1:9", "-p", "hi", "--model", "x"}, 0, []string{"-p", "hi", "--model", "x"}},
		{"after --", nil, []string{"claude", "-v", "--", "--limit", "5"}, 0, []string{"--limit", "5"}},
		{"a positional first", nil, []string{"claude", "fix it", "--limit", "5"}, 0, []string{"fix it", "--limit", "5"}},
		{"a failing client", []string{"FAKE_EXIT=7"}, []string{"claude", "-p", "hi"}, 7, []string{"-p", "hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr, rec := runLaunch(t, dir, tc.env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if len(rec) != len(tc.clientArgs)+4 || !strings.HasPrefix(rec[0], "--mcp-config=") || rec[1] != "--allowedTools=mcp__agentctx" ||
				!strings.HasPrefix(rec[2], "--add-dir=") || !strings.Contains(rec[2], "agentctx/projects/") ||
				!slices.Equal(rec[3:len(rec)-1], tc.clientArgs) || !strings.HasPrefix(rec[len(rec)-1], "base=http://127.0.0.1:") {
				t.Errorf("the client got %q, want the MCP config, the allowed tools, the workspace's --add-dir, %q and the base URL", rec, tc.clientArgs)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if !strings.HasPrefix(lines[0], "agentctx: claude through a proxy at http://127.0.0.1:") || !strings.HasSuffix(lines[0], "/agentctx/)") ||
				lines[len(lines)-1] != "agentctx: 0 requests, 0 compactions, $0.00 instead of $0.00" ||
				len(lines) != 2 && !slices.Contains(tc.args, "-v") {
				t.Errorf("stderr is not the launch line and the summary alone:\n%s", stderr)
			}
		})
	}

	// Bad usage: exit 2 and one line, the client never started.
	noClient := t.TempDir()
	for _, args := range [][]string{
		{"claude", "--proxy", "http://127.0.0.1:9"}, // nothing answers there
		{"claude", "--limit", "0"},
		{"claude", "--limit"},
	} {
		code, stderr, rec := runLaunch(t, dir, nil, args...)
		if code != cli.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || rec[0] != "" {
			t.Errorf("%q: exit %d, stderr %q, client %q; want 2, one line, no client", args, code, stderr, rec)
		}
	}
	// No client on PATH: one line that says how to install it, before a
	// proxy is started.
	for client, install := range map[string]string{"codex": "npm install -g @openai/codex", "claude": "npm install -g @anthropic-ai/claude-code"} {
		code, stderr, _ := runLaunch(t, noClient, []string{"PATH=" + noClient}, client)
		if code != cli.ExitUsage || !strings.Contains(stderr, client+" is not on PATH") || !strings.Contains(stderr, install) ||
			strings.Contains(stderr, "through a proxy") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("no %s on PATH: exit %d, %q; want 2 and one line with %q", client, code, stderr, install)
		}
	}
}

// SIGTERM (and SIGINT when stdin is not a terminal) sent to agentctx go to
// the client, whose exit code agentctx returns once it exited.
func TestLaunchForwardsSignals(t *testing.T) {
	dir := fakeClient(t, "claude", `trap 'exit 42' TERM
trap 'exit 43' INT
touch "$OUT.ready"
while :; do sleep 0.05; done`)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 42}, {syscall.SIGINT, 43}} {
		out := filepath.Join(t.TempDir(), "out")
		cmd := exec.CommandContext(t.Context(), agentctxBinary(t), "claude", "-p", "hi")
		cmd.Dir = t.TempDir()
		cmd.Env = append(e2eclient.MinimalEnv(), "PATH="+dir+":"+os.Getenv("PATH"), "HOME="+cmd.Dir, "OUT="+out)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(out + ".ready"); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(tc.sig)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != tc.code {
			t.Errorf("%v: exit %d, want the client's %d; stderr:\n%s", tc.sig, code, tc.code, stderr.String())
		}
	}
}

// On a terminal, Ctrl-C belongs to the client (the terminal delivers it to
// the client itself): a SIGINT to agentctx neither stops agentctx nor
// reaches the client a second time; a SIGTERM still does.
func TestLaunchLeavesCtrlCToTheClient(t *testing.T) {
	dir := fakeClient(t, "claude", `trap 'exit 42' TERM
trap 'exit 43' INT
touch "$OUT.ready"
while :; do sleep 0.05; done`)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(agentctxBinary(t), "claude")
	cmd.Dir = t.TempDir()
	cmd.Env = append(e2eclient.MinimalEnv(), "PATH="+dir+":"+os.Getenv("PATH"), "HOME="+cmd.Dir, "OUT="+out, "TERM=xterm")
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	go io.Copy(io.Discard, tty)
	t.Cleanup(func() { cmd.Process.Kill() })
	for i := 0; i < 1000; i++ {
		if _, err := os.Stat(out + ".ready"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond) // a forwarded SIGINT would have ended the client by now
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 42 {
		t.Errorf("exit %d, want 42 (the client ended by the SIGTERM, not 43 by a forwarded SIGINT, nor agentctx stopped by it)", code)
	}
}

// TestLaunchSummary: when the client exits, agentctx claude and codex
// print one line with what their proxy forwarded and billed, and the
// requests are in the ledger (agentctx savings) after the proxy is gone.
func TestLaunchSummary(t *testing.T) {
	up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer up.Close()
	ws := filepath.Join(t.TempDir(), "ws")
	for _, client := range []string{"claude", "codex"} {
		t.Run(client, func(t *testing.T) {
			// Two requests to the proxy, as the client would send them.
			req := `curl -s -o /dev/null -X POST -H 'content-type: application/json' -H 'user-agent: claude-cli/2.0.31' -H 'x-claude-code-session-id: s1' ` +
				`--data '{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' "$BASE/v1/messages"`
			body := "BASE=$ANTHROPIC_BASE_URL\n"
			if client == "codex" { // the base URL is in the provider the arguments configure
				body = "BASE=$(printf '%s\\n' \"$@\" | grep -o 'http://127.0.0.1:[0-9]*' | head -1)\n"
			}
			dir := fakeClient(t, client, body+req+"\n"+req)
			code, stderr, _ := runLaunch(t, dir, nil, client, "--upstream-anthropic", up.URL, "--workspace", ws)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code != 0 || !regexp.MustCompile(`^agentctx: 2 requests, 0 compactions, \$[0-9.]+ instead of \$[0-9.]+$`).MatchString(last) || last == "agentctx: 2 requests, 0 compactions, $0.00 instead of $0.00" {
				t.Fatalf("exit %d, last line %q; want the summary of 2 billed requests:\n%s", code, last, stderr)
			}
		})
	}
	code, out, errOut := runCLI(t, "", "savings", "--workspace", ws)
	if code != 0 || !strings.Contains(out, `"name":"all","requests":4`) {
		t.Fatalf("savings after both runs: exit %d %s %s", code, out, errOut)
	}
}
