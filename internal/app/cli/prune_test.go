package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/prune"
)

// pruneHistory is seed 004's example 5 in the OpenAI shape, oldest first:
// result i answers call ci and the seed's item number is i.
func pruneHistory(t *testing.T) string {
	t.Helper()
	ok := `{"stdout":"Building project...\nDone in 3.2s","stderr":"","exitCode":0}`
	fail := `{"stdout":"","stderr":"Error: Cannot find module 'xxx'","exitCode":1}`
	items := []struct {
		n             int
		clock, tool   string
		content, note string
	}{
		{10, "00:30", "terminal-execute", fail, ""},
		{9, "00:40", "filesystem-read", "File content: ...", ""},
		{8, "00:50", "terminal-execute", ok, ""},
		{7, "01:20", "terminal-execute", ok, ""},
		{6, "01:30", "terminal-execute", ok, ""},
		{5, "01:35", "terminal-execute", ok, ""},
		{4, "01:40", "terminal-execute", fail, ""},
		{3, "01:45", "terminal-execute", ok, ""},
		{2, "01:50", "terminal-execute", ok, ""},
		{1, "01:55", "filesystem-read", "File content: ...", ""},
	}
	var msgs []any
	for _, it := range items {
		id := fmt.Sprintf("c%d", it.n)
		ts, err := time.Parse(time.RFC3339, "2026-01-31T"+it.clock+":00Z")
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": id, "type": "function", "function": map[string]any{"name": it.tool, "arguments": `{"command":"make"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": it.content, "timestamp": ts.UnixMilli()},
		)
	}
	data, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

type pruneOutput struct {
	Messages []struct {
		Role       string          `json:"role"`
		ToolCallID string          `json:"tool_call_id"`
		Content    json.RawMessage `json:"content"`
		Timestamp  int64           `json:"timestamp"`
	} `json:"messages"`
	Pruned []struct {
		MessageIndex int    `json:"message_index"`
		BlockIndex   int    `json:"block_index"`
		ID           string `json:"id"`
		ToolName     string `json:"tool_name"`
	} `json:"pruned"`
	PrunedCount int `json:"pruned_count"`
	FreedChars  int `json:"freed_chars"`
	FreedTokens int `json:"freed_tokens"`
}

func (o pruneOutput) ids() []string {
	ids := []string{}
	for _, p := range o.Pruned {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestPruneCommand(t *testing.T) {
	history := pruneHistory(t)
	tests := []struct {
		name string
		args []string
		want []string // pruned ids, oldest first
	}{
		{"seed example 5, RFC 3339", []string{"prune", "--now", "2026-01-31T02:00:00Z"}, []string{"c8", "c7"}},
		{"epoch ms", []string{"prune", "--now", "1769824800000"}, []string{"c8", "c7"}},
		{"time zone offset", []string{"prune", "--now", "2026-01-31T10:00:00+08:00"}, []string{"c8", "c7"}},
		{"stdin dash", []string{"prune", "--now", "2026-01-31T02:00:00Z", "-"}, []string{"c8", "c7"}},
		{"keep 2", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--keep-recent", "2"}, []string{"c8", "c7", "c6", "c5"}},
		{"keep 0", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--keep-recent=0"}, []string{"c8", "c7", "c6", "c5"}},
		{"max age 1h", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--max-age", "1h"}, []string{"c8"}},
		{"max age 0", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--max-age", "0", "--keep-recent", "0"}, []string{"c8", "c7", "c6", "c5", "c3", "c2"}},
		{"count errors", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--count-errors"}, []string{"c8", "c7", "c6"}},
		{"more tools", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--tool", "terminal-execute", "--tool", "filesystem-read"}, []string{"c9", "c8", "c7"}},
		{"no tool names: content decides", []string{"prune", "--now", "2026-01-31T02:00:00Z", "--tool="}, []string{"c8", "c7"}},
		{"15 minutes before: nothing is old enough", []string{"prune", "--now", "2026-01-31T01:05:00Z"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, history, tt.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			var got pruneOutput
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if !slices.Equal(got.ids(), tt.want) || got.PrunedCount != len(tt.want) {
				t.Fatalf("pruned %v (count %d), want %v", got.ids(), got.PrunedCount, tt.want)
			}
			if len(got.Messages) != 20 {
				t.Fatalf("%d messages, want 20", len(got.Messages))
			}
			pruned := map[int]bool{}
			for _, p := range got.Pruned {
				pruned[p.MessageIndex] = true
				if p.BlockIndex != -1 || got.Messages[p.MessageIndex].ToolCallID != p.ID || p.ToolName == "" {
					t.Errorf("bad report entry %+v", p)
				}
			}
			for i, m := range got.Messages {
				if m.Role != "tool" {
					continue
				}
				isPlaceholder := string(m.Content) == `"此命令返回内容已过时"`
				if isPlaceholder != pruned[i] || m.Timestamp == 0 {
					t.Errorf("message %d: content %s, timestamp %d", i, m.Content, m.Timestamp)
				}
			}
			if len(tt.want) > 0 && (got.FreedChars <= 0 || got.FreedTokens <= 0) {
				t.Errorf("freed %d chars, %d tokens", got.FreedChars, got.FreedTokens)
			}
		})
	}
}

func TestPruneCommandOutput(t *testing.T) {
	// Seed 004 example 9: the record as sent, member order kept.
	in := `[{"content":"{\"stdout\":\"Building project...\\nDone in 3.2s\",\"stderr\":\"\",\"exitCode\":0}","timestamp":1738287600000,"role":"tool"}]`
	out, errOut, code := run(t, in, "prune", "--now", "1738288800000", "--keep-recent", "0", "--placeholder", "<stale & gone>")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `{"messages":[{"content":"<stale & gone>","timestamp":1738287600000,"role":"tool"}],` +
		`"pruned":[{"message_index":0,"block_index":-1,"id":"","tool_name":"","timestamp":"2025-01-31T01:40:00Z","chars":71,"tokens":22,"freed_chars":57,"freed_tokens":16}],` +
		`"pruned_count":1,"freed_chars":57,"freed_tokens":16,"skipped_no_timestamp":0}` + "\n"
	if out != want {
		t.Errorf("stdout\n%s\nwant\n%s", out, want)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"messages", "pruned", "pruned_count", "freed_chars", "freed_tokens"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("output lacks %q: keys %v", k, slices.Sorted(maps.Keys(keys)))
		}
	}

	// A timestamp no JSON time can hold is no timestamp.
	out, errOut, code = run(t, `[{"role":"tool","content":"{\"stdout\":\"x\"}","timestamp":-90000000000000000}]`, "prune", "--max-age", "0", "--keep-recent", "0")
	if code != 0 || !strings.Contains(out, `"pruned_count":0`) || !strings.Contains(out, `"skipped_no_timestamp":1`) {
		t.Errorf("exit %d, stderr %q, stdout %s", code, errOut, out)
	}

	// Nothing to prune: empty list, not null.
	out, _, code = run(t, `[{"role":"user","content":"hi"}]`, "prune")
	if code != 0 || !strings.Contains(out, `"pruned":[]`) || !strings.Contains(out, `"pruned_count":0`) {
		t.Errorf("exit %d, stdout %s", code, out)
	}
}

func TestPruneCommandFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.json")
	history := pruneHistory(t)
	if err := os.WriteFile(path, []byte(history), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "", "prune", "--now", "2026-01-31T02:00:00Z", path)
	if code != 0 || !strings.Contains(out, `"pruned_count":2`) {
		t.Fatalf("exit %d, stderr %q, stdout %s", code, errOut, out)
	}
	if data, _ := os.ReadFile(path); string(data) != history {
		t.Error("prune modified its input file")
	}
}

func TestPruneCommandErrors(t *testing.T) {
	history := pruneHistory(t)
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		err   string
	}{
		{"bad --now", history, []string{"prune", "--now", "yesterday"}, 2, `invalid --now "yesterday"`},
		{"empty --now", history, []string{"prune", "--now", ""}, 2, "invalid --now"},
		{"bad --max-age", history, []string{"prune", "--max-age", "15"}, 2, "invalid argument"},
		{"negative --max-age", history, []string{"prune", "--max-age", "-1m"}, 2, "invalid --max-age -1m0s"},
		{"negative --keep-recent", history, []string{"prune", "--keep-recent", "-1"}, 2, "invalid --keep-recent -1"},
		{"empty --placeholder", history, []string{"prune", "--placeholder", ""}, 2, "invalid --placeholder"},
		{"malformed input", `[{"role":`, []string{"prune"}, 2, "unexpected end of JSON input"},
		{"not messages", `{"a":1}`, []string{"prune"}, 2, "agentctx: "},
		{"missing file", ``, []string{"prune", "no/such/file.json"}, 2, "no such file or directory"},
		{"too many args", history, []string{"prune", "a", "b"}, 2, "accepts at most 1 arg(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.stdin, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if out != "" {
				t.Errorf("wrote to stdout: %s", out)
			}
			if !strings.HasPrefix(errOut, "agentctx: ") || !strings.Contains(errOut, tt.err) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr = %q, want one line with %q", errOut, tt.err)
			}
		})
	}
}

func TestPruneCommandVerboseLogs(t *testing.T) {
	_, errOut, code := run(t, pruneHistory(t), "prune", "-v", "--now", "2026-01-31T02:00:00Z")
	if code != 0 || !strings.Contains(errOut, "pruned_count=2") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestPruneCommandDefaults(t *testing.T) {
	cmd := newPruneCmd(&env{})
	for flag, want := range map[string]string{
		"max-age":     "15m0s",
		"keep-recent": "5",
		"placeholder": prune.DefaultPlaceholder,
		"now":         "",
		"by-shape":    "false",
		"tool":        "[terminal-execute,Bash,shell,exec_command,local_shell,execute_bash,run_shell_command,execute_command,run_commands]",
	} {
		if got := cmd.Flags().Lookup(flag).DefValue; got != want {
			t.Errorf("--%s default %q, want %q", flag, got, want)
		}
	}
}

// The single-shot prune keeps the seed's rule: a file read (example 6's
// filesystem-read) whose content is shaped like a shell transcript stays;
// --by-shape clears it as terminal output (issue 47).
func TestPruneCommandByShape(t *testing.T) {
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(pruneHistory(t)), &msgs); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m["tool_call_id"] == "c9" {
			m["content"] = "Command: make\nDirectory: (root)\nOutput: Building project...\nDone in 3.2s\nError: (none)\nExit Code: 0\nSignal: (none)"
		}
	}
	history, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"c8", "c7"}},
		{[]string{"--by-shape"}, []string{"c9", "c8", "c7"}},
	} {
		out, errOut, code := run(t, string(history), append([]string{"prune", "--now", "2026-01-31T02:00:00Z"}, tc.args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var got pruneOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.ids(), tc.want) {
			t.Errorf("%v: pruned %v, want %v", tc.args, got.ids(), tc.want)
		}
	}
}
