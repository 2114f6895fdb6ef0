package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummaryEvalCommand(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`[{"role":"user","content":"Fix parse_header in /repo/parse.go."}`)
	for range 30 {
		b.WriteString(`,{"role":"assistant","content":"Working on parse_header, step ` + strings.Repeat("x", 400) + `"}`)
		b.WriteString(`,{"role":"user","content":"go on"}`)
	}
	b.WriteString(`,{"role":"assistant","content":"parse_header in /repo/parse.go is fixed."}]`)
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runCLI(t, "", "summary-eval", "--limit", "3000", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := jsonKeys(t, out, "conversations", "targets_met")
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(m["conversations"], &rows); err != nil || len(rows) != 1 {
		t.Fatalf("conversations: %v %s", err, m["conversations"])
	}
	if string(m["targets_met"]) != "true" {
		t.Errorf("targets_met = %s: %s", m["targets_met"], rows[0]["score"])
	}

	code, out, _ = runCLI(t, "", "summary-eval", "--limit", "3000", "--markdown", "--check", dir)
	if code != 0 || !strings.Contains(out, "| s.json |") || !strings.Contains(out, "| met |") {
		t.Errorf("markdown: exit %d\n%s", code, out)
	}
	// A budget no summary fits: --check fails with exit 1.
	if code, _, errs := runCLI(t, "", "summary-eval", "--limit", "3000", "--max-tokens", "10", "--check", dir); code != 1 || !strings.Contains(errs, "missed a target") {
		t.Errorf("--check: exit %d: %s", code, errs)
	}

	// Records the reader skips are said: a Claude Code session with
	// progress and sidechain records.
	session, err := filepath.Abs("../../../testdata/claude_code.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "", "summary-eval", "--limit", "3000", session)
	if code != 0 || !strings.Contains(errs, "notice: claude_code.jsonl: 6 records skipped") || !strings.Contains(out, `"notice":"6 records skipped`) {
		t.Errorf("skipped records: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}

	for _, args := range [][]string{
		{"summary-eval"},
		{"summary-eval", filepath.Join(dir, "missing.json")},
		{"summary-eval", t.TempDir()},
		{"summary-eval", "--limit", "0", file},
		{"summary-eval", "--tail-ratio", "1.5", file},
	} {
		if code, out, errs := runCLI(t, "", args...); code != 2 || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
