package cli_test

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/testbin"
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
