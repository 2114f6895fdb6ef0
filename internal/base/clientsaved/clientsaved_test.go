package clientsaved

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The previews clients show for a long output they saved to a file of
// their own name its path; a result that merely mentions a path, or a
// tool's own "saved to", names none (issue 47, items 5 and 6).
func TestAppend(t *testing.T) {
	long := strings.Repeat("output line\n", 3000)
	cases := []struct {
		name, text string
		want       []string
	}{
		// Claude Code: a <persisted-output> preview of 2 KB.
		{"claude code", "<persisted-output>\nOutput too large (58.6KB). Full output saved to: /home/u/.claude/projects/-w/4f1c/tool-results/toolu_01.txt\n\nPreview (first 2KB):\nabc\n...\n</persisted-output>",
			[]string{"/home/u/.claude/projects/-w/4f1c/tool-results/toolu_01.txt"}},
		{"claude code on windows", "<persisted-output>\nOutput too large (34.3KB). Full output saved to: C:\\Users\\Ada Lovelace\\.claude\\projects\\H--app\\0467\\tool-results\\toolu_01UH.txt\n\nPreview (first 2KB):\nH:\\app\\x.ts:1: y\n</persisted-output>",
			[]string{`C:\Users\Ada Lovelace\.claude\projects\H--app\0467\tool-results\toolu_01UH.txt`}},
		{"claude code, a command in the background", "Command running in background with ID: b7b23b2. Output is being written to: /tmp/claude-1000/-home-u-app/tasks/b7b23b2.output",
			[]string{"/tmp/claude-1000/-home-u-app/tasks/b7b23b2.output"}},
		// opencode and Kilo (its fork): the hint after the head it keeps,
		// or before the tail; the shell's notice before the tail.
		{"opencode", "warning: unused\n\n...609936 bytes truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /home/u/.local/share/opencode/tool-output/tool_cb7a1db8e001A9T5F9XI2zMoli\nUse the Task tool to have explore agent process this file with Grep and Read (with offset/limit). Do NOT read the full file yourself - delegate to save context.",
			[]string{"/home/u/.local/share/opencode/tool-output/tool_cb7a1db8e001A9T5F9XI2zMoli"}},
		{"opencode, the tail kept", "...2400 lines truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /home/u/.local/share/opencode/tool-output/tool_c5a9\nUse Grep to search the full content or Read with offset/limit to view specific sections.\n\nlast line",
			[]string{"/home/u/.local/share/opencode/tool-output/tool_c5a9"}},
		{"opencode shell", "...output truncated...\n\nFull output saved to: /home/u/.local/share/opencode/tool-output/tool_d01\n\nok  \tapp\t0.2s\n<shell_metadata>\nexit 0\n</shell_metadata>",
			[]string{"/home/u/.local/share/opencode/tool-output/tool_d01"}},
		{"kilo", "line\n\n...120 lines truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /home/u/.local/share/kilo/tool-output/tool_9a8b7c\nUse Grep to search the full content or Read with offset/limit to view specific sections.",
			[]string{"/home/u/.local/share/kilo/tool-output/tool_9a8b7c"}},
		// Qwen Code: its shell's head and tail, and its persisted stub.
		{"qwen code", "Tool output was too large and has been truncated.\nThe full output has been saved to: /home/u/.qwen/tmp/ab12/run_shell_command_4f2a.output\nTo read the complete output, use the read_file tool with the absolute file path above.\nTruncated part of the output:\nabc",
			[]string{"/home/u/.qwen/tmp/ab12/run_shell_command_4f2a.output"}},
		{"qwen code, persisted", "<persisted-output>\nOutput too large (57 KB). Full output saved to: /home/u/.qwen/tmp/ab12/tool-results/call_7.txt\nNote: this file may be cleaned up after 24 hours.\nTo read the complete output, use the read_file tool with the absolute file path above.\n\nPreview (up to 2000 chars):\nabc\n</persisted-output>",
			[]string{"/home/u/.qwen/tmp/ab12/tool-results/call_7.txt"}},

		{"at the end of a long output", long + "\nThe tool call succeeded but the output was truncated. Full output saved to: /tmp/x/full\n", []string{"/tmp/x/full"}},
		{"each once", "Full output saved to: /tmp/x/a.txt\nFull output saved to: /tmp/x/a.txt\nFull output saved to: /tmp/x/b.txt", []string{"/tmp/x/a.txt", "/tmp/x/b.txt"}},
		{"the sentence's full stop", "Full output saved to: /tmp/x/a.txt.", []string{"/tmp/x/a.txt"}},
		{"JSON-encoded", jsonOf("Full output saved to: /tmp/x/c.txt\nmore"), []string{"/tmp/x/c.txt"}},

		{"a path mentioned", "a path: /home/u/src/main.go\n" + long, nil},
		{"a file read", "     1\tpackage main\n     2\t// see /home/u/.claude/projects/-w/4f1c/tool-results/toolu_01.txt\n", nil},
		{"a tool's own file", "test result: ok. 29 passed\n\n    Finished report saved to /tmp/tmpqwh7888i/target/llvm-cov/html\n", nil},
		{"a tool's own file, with a colon", "Model saved to: /home/u/models/run1/model.pt\nLogs written to: /var/log/app/run.log", nil},
		{"a notice quoted in source code", `x_test.go:20:	"<persisted-output>\nOutput too large (58.6KB). Full output saved to: /home/u/.claude/t/toolu_01.txt\n\nPreview",`, nil},
		{"a notice quoted in backticks", "the client says `Full output saved to: /tmp/x/a.txt`", nil},
		{"no file", "Output too large (51 KB). Full output saved to: (file too large to persist)", nil},
		{"relative path", "Full output saved to: out/log.txt", nil},
		{"a root or one level", "Full output saved to: /\nFull output saved to: /tmp\nFull output saved to: /tmp/x/", nil},
		{"in the middle of a long output", long + "Full output saved to: /tmp/x/mid.txt\n" + long, nil},
	}
	for _, c := range cases {
		if got := Append(nil, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: Append = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Append([]string{"/tmp/x/a.txt"}, "Full output saved to: /tmp/x/b.txt\nFull output saved to: /tmp/x/a.txt"); !slices.Equal(got, []string{"/tmp/x/a.txt", "/tmp/x/b.txt"}) {
		t.Errorf("Append to a list = %q: want each path once, the new after the old", got)
	}
}

func jsonOf(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestNamed(t *testing.T) {
	paths := []string{"/tmp/x/a.txt", `C:\tool-results\t1.txt`}
	for in, want := range map[string]bool{
		`{"file_path":"/tmp/x/a.txt"}`:                 true,
		`{"file_path":"/tmp/x/a.txt","offset":2000}`:   true,
		`{"command":"sed -n 1,200p /tmp/x/a.txt"}`:     true,
		`{"command":"cat /tmp/x/a.txt\nls"}`:           true,
		`{"command":"grep -n err /tmp/x/a.txt:12"}`:    true,
		`{"path":"C:\\tool-results\\t1.txt"}`:          true,
		`{"file_path":"/tmp/x/b.txt"}`:                 false,
		`{"file_path":"/tmp/x/"}`:                      false,
		`{"file_path":"/tmp/x/a.txt.bak"}`:             false,
		`{"file_path":"/var/tmp/x/a.txt"}`:             false,
		`{"command":"cat /tmp/x/a.txt2 /tmp/x/a.txt"}`: true,
		``: false,
	} {
		if got := Named([]byte(in), paths); got != want {
			t.Errorf("Named(%s) = %v, want %v", in, got, want)
		}
	}
}
