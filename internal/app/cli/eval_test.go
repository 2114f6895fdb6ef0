package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/pipeline/eval"
)

func evalDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.json":          `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}]`,
		"claude.jsonl":    readTestdata(t, "claude_code.jsonl"),
		"openhands.jsonl": readTestdata(t, "openhands_output.jsonl"),
		"README.md":       "not a transcript",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEvalCommand(t *testing.T) {
	dir := evalDir(t)
	work := filepath.Join(t.TempDir(), "work")
	code, out, errOut := prepRun(t, true, "", "eval", "--work", work, "--check", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ev struct {
		OK            bool             `json:"ok"`
		Files         int              `json:"files"`
		Conversations int              `json:"conversations"`
		Rows          []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !ev.OK || ev.Files != 3 || ev.Conversations != 4 || len(ev.Rows) != 4 {
		t.Errorf("ok %v, files %d, conversations %d", ev.OK, ev.Files, ev.Conversations)
	}
	for _, k := range []string{"file", "format", "messages", "tokens_before", "tokens_after", "valid", "below_threshold",
		"stored_bytes", "offloaded_bytes", "identical", "checked", "read_ms", "prepare_ms", "ok"} {
		if _, ok := ev.Rows[0][k]; !ok {
			t.Errorf("row has no %q", k)
		}
	}
	if !strings.Contains(errOut, "3/3") {
		t.Errorf("no progress on the terminal: %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "claude.jsonl", "workspace")); err != nil {
		t.Errorf("--work not kept: %v", err)
	}

	code, out, _ = prepRun(t, false, "", "eval", "--markdown", dir)
	if code != 0 || !strings.HasPrefix(out, "| transcript |") || !strings.Contains(out, "openhands.jsonl · calc__calc-2") {
		t.Errorf("markdown: exit %d\n%s", code, out)
	}
}

func TestEvalCommandCheckFails(t *testing.T) {
	// With a 50-token window the last message alone is over the trigger.
	code, out, errOut := prepRun(t, false, "", "eval", "--limit", "50", "--check", evalDir(t))
	if code != cli.ExitFailure || out == "" || !strings.Contains(errOut, "missed a target") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	var ev eval.Evaluation
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.Passed == ev.Conversations {
		t.Errorf("%v: passed %d of %d", err, ev.Passed, ev.Conversations)
	}
}

func TestEvalCommandUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.json")
	os.WriteFile(file, []byte(`[]`), 0o644)
	folders := t.TempDir()
	os.MkdirAll(filepath.Join(folders, "a", "b"), 0o755)
	for _, args := range [][]string{
		{"eval"},
		{"eval", filepath.Join(t.TempDir(), "missing")},
		{"eval", file},
		{"eval", "--limit", "0", t.TempDir()},
		{"eval", "--offload", "x", t.TempDir()},
		{"eval", folders}, // a folder of folders with no transcript in it
	} {
		code, out, errOut := prepRun(t, false, "", args...)
		if code != cli.ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
