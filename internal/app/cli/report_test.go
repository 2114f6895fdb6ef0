package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/app/cli"
)

func TestReportOfATranscript(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	code, stdout, errs := runCLI(t, "", "report", "--limit", "20000", "--html", out, filepath.Join("..", "..", "..", "examples", "session.json"))
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

// agentctx report --session reads a live session from a running proxy (its
// token from the flag or the environment) and writes its table and page.
func TestReportOfALiveSession(t *testing.T) {
	base, stop := startProxy(t, []string{"proxy", "--listen", "127.0.0.1:0", "--token", "tok"})
	defer stop()
	postMessages(t, base, "live-1")
	postMessages(t, base, "live-1")
	out := filepath.Join(t.TempDir(), "live.html")
	code, stdout, errs := runCLI(t, "", "report", "--session", "live-1", "--proxy", base, "--token", "tok", "--html", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(stdout, "live-1: 2 requests") || !strings.Contains(stdout, "context (tokens)") || !strings.Contains(stdout, "after") {
		t.Errorf("table:\n%s", stdout)
	}
	if page, err := os.ReadFile(out); err != nil || !strings.Contains(string(page), `"title":"live-1"`) {
		t.Errorf("html: %v %.300s", err, page)
	}
	t.Setenv("AGENTCTX_TOKEN", "tok")
	if code, stdout, errs := runCLI(t, "", "report", "--session", "live-1", "--proxy", base); code != 0 || !strings.HasPrefix(stdout, "live-1: 2 requests") {
		t.Errorf("token from the environment: exit %d, %s%s", code, stdout, errs)
	}
	for _, args := range [][]string{
		{"report", "--session", "nope", "--proxy", base, "--token", "tok"},
		{"report", "--session", "live-1", "--proxy", base, "--token", "bad"},
	} {
		code, stdout, errs := runCLI(t, "", args...)
		if code != cli.ExitUsage || stdout != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "bad") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, one line, no token", args, code, stdout, errs)
		}
	}
}

// The --html page quotes the session's messages: it is written for the
// user only (0600), as everything else agentctx stores, also over a page
// an earlier run left readable by others (issue 49).
func TestReportHTMLMode(t *testing.T) {
	for _, tt := range []struct {
		name     string
		existing bool
	}{{"new file", false}, {"over a 0644 file", true}} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report.html")
			if tt.existing {
				if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if code, _, errs := runCLI(t, "", "report", "--limit", "20000", "--html", out, filepath.Join("..", "..", "..", "examples", "session.json")); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			fi, err := os.Stat(out)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("report.html: %v, %v; want mode 0600", fi.Mode().Perm(), err)
			}
		})
	}
}
