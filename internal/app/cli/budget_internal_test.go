package cli

import (
	"testing"

	"github.com/agentctx/agentctx/workspace"
)

// TestWorkspaceBudgetFlags: --workspace-session-bytes and
// --workspace-total-bytes reach the workspace's options of the live
// commands (proxy, claude, codex share these flags): the defaults, a
// size with a unit, and 0 for no bound (a negative bound there).
func TestWorkspaceBudgetFlags(t *testing.T) {
	for _, tc := range []struct {
		args                   []string
		wantSession, wantTotal int64
	}{
		{nil, workspace.DefaultSessionBytes, workspace.DefaultTotalBytes},
		{[]string{"--workspace-session-bytes", "500MB"}, 500_000_000, workspace.DefaultTotalBytes},
		{[]string{"--workspace-total-bytes", "2GiB"}, workspace.DefaultSessionBytes, 2 << 30},
		{[]string{"--workspace-session-bytes", "0", "--workspace-total-bytes", "0"}, -1, -1},
	} {
		po := proxyPipelineOptions(t, tc.args...)
		if po.Workspace.SessionBytes != tc.wantSession || po.Workspace.TotalBytes != tc.wantTotal {
			t.Errorf("%v: Workspace.SessionBytes, TotalBytes = %d, %d; want %d, %d", tc.args,
				po.Workspace.SessionBytes, po.Workspace.TotalBytes, tc.wantSession, tc.wantTotal)
		}
	}
}
