package cli_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/testbin"
	"github.com/agentctx/agentctx/proxy"
)

// agentctxBinary returns the agentctx binary built once per source tree
// (internal/testkit/testbin): the tests that need a real process (signals, a
// child client) run it.
func agentctxBinary(t *testing.T) string {
	t.Helper()
	return testbin.Agentctx(t)
}

// Ctrl-C stops the servers with exit code 130, as it stops every command:
// the built binary, a real SIGINT (and SIGTERM).
func TestServersExit130OnSignal(t *testing.T) {
	bin := agentctxBinary(t)
	for _, tc := range []struct {
		name  string
		args  []string
		ready string // a line of the output once it serves
		sig   syscall.Signal
	}{
		{"proxy/SIGINT", []string{"proxy", "--listen", "127.0.0.1:0"}, "ANTHROPIC_BASE_URL=", syscall.SIGINT},
		{"proxy/SIGTERM", []string{"proxy", "--listen", "127.0.0.1:0"}, "ANTHROPIC_BASE_URL=", syscall.SIGTERM},
		{"mcp-http/SIGINT", []string{"mcp", "--http", "127.0.0.1:0"}, "agentctx mcp: serving", syscall.SIGINT},
		{"mcp-stdio/SIGINT", []string{"mcp"}, "", syscall.SIGINT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.CommandContext(t.Context(), bin, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+dir)
			stdin, err := cmd.StdinPipe() // left open: mcp on stdio serves until it ends
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			pr, pw := io.Pipe()
			cmd.Stdout, cmd.Stderr = pw, pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var out strings.Builder
			if tc.ready != "" {
				for l := range lines {
					out.WriteString(l + "\n")
					if strings.HasPrefix(l, tc.ready) {
						break
					}
				}
			} else {
				time.Sleep(300 * time.Millisecond) // nothing printed on stdio: give it time to start serving
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			pw.Close()
			for l := range lines {
				out.WriteString(l + "\n")
			}
			if code := cmd.ProcessState.ExitCode(); code != cli.ExitInterrupted {
				t.Errorf("exit %d (%v) after %v, want %d; output:\n%s", code, err, tc.sig, cli.ExitInterrupted, out.String())
			}
		})
	}
}

// The proxy serves with Go's default collector, not the short-lived
// commands' GOGC of 400, under which the heap of a long-lived proxy grew
// to five times what its memory bounds let it keep (a 10 MB request
// peaked at 480–495 MB of RSS, 291 MB with the default; issue 24). GOGC,
// when the user sets it, is left alone. The built binary, its stats.
func TestProxyKeepsTheDefaultCollector(t *testing.T) {
	bin := agentctxBinary(t)
	for _, tc := range []struct {
		env  []string
		want int
	}{
		{nil, 100},
		{[]string{"GOGC=50"}, 50},
	} {
		dir := t.TempDir()
		cmd := exec.CommandContext(t.Context(), bin, "proxy", "--listen", "127.0.0.1:0", "--workspace", dir+"/ws")
		cmd.Dir = dir
		cmd.Env = append(append(e2eclient.MinimalEnv(), "HOME="+dir), tc.env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("no first line: %v", err)
		}
		base := strings.TrimPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
		var st struct {
			Process struct {
				GCPercent int `json:"gc_percent"`
			} `json:"process"`
		}
		resp, err := http.Get(base + proxy.StatsPath)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if st.Process.GCPercent != tc.want {
			t.Errorf("env %v: the proxy serves with GOGC %d, want %d", tc.env, st.Process.GCPercent, tc.want)
		}
	}
}

// Only the commands that serve until stopped keep the default collector.
func TestShortLived(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"proxy", "--listen", ":0"}, false},
		{[]string{"mcp"}, false},
		{[]string{"claude", "-p", "hi"}, false},
		{[]string{"codex", "exec", "hi"}, false},
		{[]string{"count", "f.json"}, true},
		{[]string{"prepare"}, true},
		{[]string{"no-such-command"}, true},
		{nil, true},
	} {
		if got := cli.TraitsOf(tc.args).ShortLived; got != tc.want {
			t.Errorf("ShortLived(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
