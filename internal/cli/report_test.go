package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/cli"
)

func TestReportOfATranscript(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	code, stdout, errs := runCLI(t, "", "report", "--limit", "20000", "--html", out, filepath.Join("..", "..", "examples", "session.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "session.json: 49 requests") || !strings.Contains(stdout, "cleared") || !strings.Contains(stdout, "after") {
		t.Errorf("table:\n%s", stdout)
	}
	page, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(page), `id="report-data"`) || !strings.Contains(string(page), `"timeline":[`) {
		t.Errorf("html: %v %.300s", err, page)
	}
}

func TestReportBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"report"},
		{"report", "a.json", "--session", "s"},
		{"report", "--session", "s", "--proxy", "http://127.0.0.1:1"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code == 0 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want an error, one line on stderr", args, code, out, errs)
		}
		if len(args) < 4 && code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}
