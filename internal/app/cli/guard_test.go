package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/app/cli"
)

// agentctx proxy on a non-loopback address refuses to start without a
// token, as mcp --http does (issue 49.2: it started on 0.0.0.0 without
// one, and its statistics, dashboard and /mcp served anyone who said
// Host: localhost): exit 2, one line naming --token, nothing opened.
func TestProxyNeedsATokenOffLoopback(t *testing.T) {
	t.Setenv("AGENTCTX_TOKEN", "")
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.7:0"} {
		ws := filepath.Join(t.TempDir(), "ws")
		// A proxy that starts serves until its context ends: bound it,
		// so that a regression fails instead of hanging.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		var outb, errb bytes.Buffer
		code := cli.Run(ctx, []string{"proxy", "--listen", listen, "--workspace", ws}, cli.Streams{In: strings.NewReader(""), Out: &outb, Err: &errb})
		cancel()
		out, errOut := outb.String(), errb.String()
		if code != 2 || !strings.Contains(errOut, "--token") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
			t.Errorf("--listen %s: exit %d, stdout %q, stderr %q; want exit 2 and one line naming --token", listen, code, out, errOut)
		}
		if _, err := os.Stat(ws); err == nil {
			t.Errorf("--listen %s: the workspace was opened before the refusal", listen)
		}
	}
}
