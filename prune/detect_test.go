package prune

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
)

// TestTerminalDetection is the table of seed 004 §3.3, plus other content
// forms.
func TestTerminalDetection(t *testing.T) {
	cases := []struct {
		name    string
		content agentctx.Content
		want    bool
	}{
		// Seed 004 §3.3.
		{"seed: all fields", agentctx.Text(`{"stdout":"hello","stderr":"","exitCode":0}`), true},
		{"seed: some fields", agentctx.Text(`{"stdout":"Build completed"}`), true},
		{"seed: file content", agentctx.Text("File content: ..."), false},
		{"seed: path JSON", agentctx.Text(`{"path":"/path/to/file"}`), false},
		// Each feature alone.
		{"stderr only", agentctx.Text(`{"stderr":""}`), true},
		{"exitCode only", agentctx.Text(`{"exitCode":0}`), true},
		{"pretty printed", agentctx.Text("{\n  \"stdout\": \"x\"\n}"), true},
		{"key without colon", agentctx.Text(`the "stdout" stream`), false},
		{"other case", agentctx.Text(`{"Stdout":"x","exit_code":0}`), false},
		{"empty", agentctx.Text(""), false},
		{"absent", agentctx.Content{}, false},
		{"null", agentctx.Null(), false},
		// Block lists: the text of text blocks counts, not its JSON escaping.
		{"text block", agentctx.BlockList(agentctx.TextBlock(`{"stdout":"x"}`)), true},
		{"second text block", agentctx.BlockList(agentctx.TextBlock("ran:"), agentctx.TextBlock(`{"exitCode":0}`)), true},
		{"plain text block", agentctx.BlockList(agentctx.TextBlock("hello")), false},
		{"empty list", agentctx.BlockList(), false},
		// Agent harnesses that write the exit status as text.
		{"mini-swe-agent", agentctx.Text("<returncode>0</returncode>\n<output>\nok\n</output>"), true},
		{"mini-swe-agent, bad number", agentctx.Text("<returncode>x</returncode>"), false},
		{"openhands", agentctx.Text("total 8\n[The command completed with exit code 0.]"), true},
		{"openhands, mid-text", agentctx.Text("[The command completed with exit code 0.] and more"), false},
	}
	for _, tc := range cases {
		if got := hasTerminalFeatures(tc.content); got != tc.want {
			t.Errorf("%s: hasTerminalFeatures(%s) = %v, want %v", tc.name, tc.content.AsText(), got, tc.want)
		}
	}
}

// TestErrorContent is the table of seed 004 §3.4 for what the content says
// (messageStatus and is_error are checked in prune_test.go), plus SPEC §4's
// exitCode rule.
func TestErrorContent(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    bool
	}{
		// Seed 004 §3.4.
		{"seed: Error: prefix", "Error: Command failed with exit code 1", true},
		{"seed: stderr not empty", `{"stdout":"","stderr":"Connection refused","exitCode":1}`, true},
		// Seed 004 §3.1 examples.
		{"seed ex1: success", `{"stdout":"Building project...\nDone in 3.2s","stderr":"","exitCode":0}`, false},
		{"seed ex3: failure", `{"stdout":"","stderr":"Error: Cannot find module 'xxx'","exitCode":1}`, true},
		// Error: prefix.
		{"Error: after white space", "\n  Error: x", true},
		// Agent harnesses that write the exit status as text.
		{"mini-swe-agent success", "<returncode>0</returncode>\n<output>\nok\n</output>", false},
		{"mini-swe-agent failure", "<returncode>2</returncode>\n<output>\nno such file\n</output>", true},
		{"openhands success", "ok\n[The command completed with exit code 0.]\n", false},
		{"openhands failure", "boom\n[The command completed with exit code 127.]", true},
		{"error: lower case", "error: x", false},
		{"Error: not at start", "Build Error: x", false},
		{"Error without colon", "Errors: 0", false},
		// stderr.
		{"stderr only", `{"stderr":"warning"}`, true},
		{"stderr empty", `{"stdout":"x","stderr":""}`, false},
		{"stderr null", `{"stdout":"x","stderr":null}`, false},
		{"stderr array", `{"stdout":"x","stderr":["a"]}`, true},
		{"stderr empty array", `{"stdout":"x","stderr":[]}`, false},
		{"stderr escaped", `{"stderr":"\u0041"}`, true},
		{"duplicate stderr: last wins", `{"stderr":"x","stderr":""}`, false},
		// exitCode.
		{"exitCode 0", `{"stdout":"x","exitCode":0}`, false},
		{"exitCode 0.0", `{"stdout":"x","exitCode":0.0}`, false},
		{"exitCode \"0\"", `{"stdout":"x","exitCode":"0"}`, false},
		{"exitCode 1", `{"stdout":"x","exitCode":1}`, true},
		{"exitCode -1", `{"stdout":"x","exitCode":-1}`, true},
		{"exitCode 127", `{"exitCode":127}`, true},
		{"exitCode null", `{"stdout":"x","exitCode":null}`, true},
		{"exitCode string", `{"stdout":"x","exitCode":"ENOENT"}`, true},
		{"exitCode absent", `{"stdout":"x"}`, false},
		// Not a JSON object: only the prefix rule applies.
		{"invalid JSON", `{"stdout":"x","stderr":"boom"`, false},
		{"JSON array", `[{"stderr":"boom"}]`, false},
		{"text mentioning stderr", `see "stderr": boom`, false},
		{"not terminal output", `{"path":"/x","stderr_log":"y"}`, false},
		{"empty", "", false},
	}
	for _, tc := range cases {
		if got := contentIsError(agentctx.Text(tc.content)); got != tc.want {
			t.Errorf("%s: contentIsError(%s) = %v, want %v", tc.name, tc.content, got, tc.want)
		}
	}
	// Block lists: any text block.
	if !contentIsError(agentctx.BlockList(agentctx.TextBlock("ok"), agentctx.TextBlock("Error: x"))) {
		t.Error("Error: in a second text block not detected")
	}
	if !contentIsError(agentctx.BlockList(agentctx.TextBlock(`{"stdout":"","exitCode":2}`))) {
		t.Error("exitCode in a text block not detected")
	}
}

// The shell tools of the agents people run count as terminal output by name
// (any case) and, for Codex, by the exit status its output starts with
// (issue 22: Codex's results were never cleared).
func TestAgentShellTools(t *testing.T) {
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := old.Add(time.Hour)
	cases := []struct {
		tool, output string
		pruned       bool
	}{
		{"exec_command", "Chunk ID: 1a2b\nWall time: 0.0521 seconds\nProcess exited with code 0\nOriginal token count: 120\nOutput:\n" + strings.Repeat("ok\n", 300), true},
		{"exec_command", "Chunk ID: 1a2b\nWall time: 0.0521 seconds\nProcess exited with code 2\nOutput:\n" + strings.Repeat("fail\n", 300), false},
		{"shell", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n" + strings.Repeat("ok\n", 300), true},
		{"shell", "Exit code: 1\nWall time: 0.1 seconds\nOutput:\n" + strings.Repeat("no\n", 300), false},
		{"local_shell", strings.Repeat("ok\n", 300), true},
		{"execute_bash", strings.Repeat("ok\n", 300) + "[The command completed with exit code 0.]", true},
		{"run_shell_command", strings.Repeat("ok\n", 300), true},
		{"bash", strings.Repeat("ok\n", 300), true},
		{"BASH", strings.Repeat("ok\n", 300), true},
		{"a_tool_of_mine", "Exit code: 0\n" + strings.Repeat("ok\n", 300), true}, // by shape
		{"a_tool_of_mine", strings.Repeat("ok\n", 300), false},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			var msgs []agentctx.Message
			for i := range 6 { // the newest five are kept
				id := fmt.Sprintf("call_%d", i)
				in, _ := json.Marshal(map[string]string{"cmd": "x"})
				msgs = append(msgs,
					agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, c.tool, in))).WithTimestamp(old),
					agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(c.output), false))).WithTimestamp(old.Add(time.Duration(i)*time.Second)))
			}
			res := Prune(msgs, Options{Now: func() time.Time { return now }})
			if got := res.PrunedCount > 0; got != c.pruned {
				t.Fatalf("pruned = %v (%d), want %v", got, res.PrunedCount, c.pruned)
			}
		})
	}
}

// containsTerminalFeature is strings.Contains of each feature, in one pass:
// features anywhere, overlapping quotes, a feature cut at the end.
func TestContainsTerminalFeatureIsContains(t *testing.T) {
	for _, s := range []string{
		"", `"`, `""`, `"stdout"`, `"stdout":`, `x"stdout":1`, `""stderr":`, `"exit"exitCode":0`,
		`{"a":"b","exitCode":`, `"exitCode"`, `no quotes at all`, `"stdout" :`, `"stdout":"stderr":`,
		strings.Repeat(`"x`, 100) + `"stderr":`, strings.Repeat(`"`, 50),
	} {
		want := false
		for _, f := range terminalFeatures {
			want = want || strings.Contains(s, f)
		}
		if got := containsTerminalFeature(s); got != want {
			t.Errorf("containsTerminalFeature(%q) = %v, want %v", s, got, want)
		}
	}
}
