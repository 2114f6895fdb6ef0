package cli_test

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/app/cli"
)

// TestWorkspaceBudgetBadFlag: a bad workspace byte budget is a usage
// error of every live command: exit 2, one line on stderr, before
// anything starts.
func TestWorkspaceBudgetBadFlag(t *testing.T) {
	for _, cmd := range []string{"proxy", "claude", "codex"} {
		for _, args := range [][]string{
			{"--workspace-session-bytes", "-1"},
			{"--workspace-session-bytes", "lots"},
			{"--workspace-total-bytes", "-5GiB"},
			{"--workspace-total-bytes", "10XB"},
		} {
			args := append([]string{cmd}, args...)
			code, out, errs := runCLI(t, "", args...)
			if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "bad size") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr saying the size is bad", args, code, out, errs)
			}
		}
	}
}
