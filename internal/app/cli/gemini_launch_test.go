package cli_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// agentctx gemini runs the gemini on PATH with GOOGLE_GEMINI_BASE_URL at
// its proxy (in place of the environment's) and its own arguments
// unchanged; the proxy forwards its requests to --upstream-gemini and
// bills them: the summary line, and the log, which never holds the key.
func TestLaunchGemini(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	up := httptest.NewServer(fake)
	defer up.Close()
	const key = "AIza-launch-test-key"
	dir := t.TempDir()
	req := `curl -s -o /dev/null -X POST -H 'content-type: application/json' -H "x-goog-api-key: $GEMINI_API_KEY" ` +
		`--data '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}' "$GOOGLE_GEMINI_BASE_URL/v1beta/models/gemini-2.5-flash:generateContent"`
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$OUT\"\necho \"base=$GOOGLE_GEMINI_BASE_URL\" >> \"$OUT\"\n" + req + "\n" + req + "\n"
	if err := os.WriteFile(filepath.Join(dir, "gemini"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, logFile := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "proxy.log")
	cmd := exec.CommandContext(t.Context(), agentctxBinary(t), "gemini", "--upstream-gemini", up.URL, "--workspace", filepath.Join(t.TempDir(), "ws"),
		"--log", logFile, "-p", "hi", "-m", "gemini-2.5-flash")
	cmd.Dir = t.TempDir()
	cmd.Env = append(e2eclient.MinimalEnv(), "PATH="+dir+":"+os.Getenv("PATH"), "HOME="+cmd.Dir, "OUT="+out,
		"GEMINI_API_KEY="+key, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	b, _ := os.ReadFile(out)
	rec := strings.Split(strings.TrimSpace(string(b)), "\n")
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if len(rec) != 5 || !slices.Equal(rec[:4], []string{"-p", "hi", "-m", "gemini-2.5-flash"}) || !regexp.MustCompile(`^base=http://127\.0\.0\.1:\d+$`).MatchString(rec[4]) ||
		rec[4] == "base=http://127.0.0.1:9" {
		t.Errorf("the client got %q, want its arguments alone and the proxy as GOOGLE_GEMINI_BASE_URL", rec)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	m := regexp.MustCompile(`^agentctx: 2 requests, 0 compactions, \$([0-9.]+) instead of \$([0-9.]+)$`).FindStringSubmatch(lines[len(lines)-1])
	if !strings.HasPrefix(lines[0], "agentctx: gemini through a proxy at http://127.0.0.1:") || m == nil || m[1] != m[2] {
		t.Errorf("stderr is not the launch line and the summary of 2 billed requests (unedited: the bill without agentctx the same):\n%s", stderr.String())
	}
	if bill := fake.Bill(); bill.Requests != 2 || bill.Rejections != 0 {
		t.Errorf("the fake's bill %+v: want 2 requests", bill.Totals)
	}
	log, _ := os.ReadFile(logFile)
	if n := bytes.Count(log, []byte("api=gemini")); n != 2 || bytes.Contains(log, []byte(key)) || !bytes.Contains(log, []byte("cost_usd=")) {
		t.Errorf("the log has %d Gemini requests (want 2, billed, without the key):\n%s", n, log)
	}
}
