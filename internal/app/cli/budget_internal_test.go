package cli

import (
	"io"
	"log/slog"
	"testing"

	"github.com/spf13/cobra"

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
		var p proxyFlags
		cmd := &cobra.Command{Use: "proxy", Args: cobra.NoArgs}
		p.register(cmd, "127.0.0.1:0")
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.DiscardHandler)
		e := &env{s: &Streams{Out: io.Discard, Err: io.Discard}, logger: log}
		po, _, _, err := p.pipelineOptions(cmd, e, log)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if po.Workspace.SessionBytes != tc.wantSession || po.Workspace.TotalBytes != tc.wantTotal {
			t.Errorf("%v: Workspace.SessionBytes, TotalBytes = %d, %d; want %d, %d", tc.args,
				po.Workspace.SessionBytes, po.Workspace.TotalBytes, tc.wantSession, tc.wantTotal)
		}
	}
}
