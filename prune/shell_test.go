package prune

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
)

// history returns six calls of tool, each answered by output, an hour
// before now: with the five newest kept, the oldest is the one prune may
// clear.
func shellHistory(tool, output string) []agentctx.Message {
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var msgs []agentctx.Message
	for i := range 6 {
		id := fmt.Sprintf("call_%d", i)
		in, _ := json.Marshal(map[string]string{"command": "x"})
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, tool, in))).WithTimestamp(old),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(output), false))).WithTimestamp(old.Add(time.Duration(i)*time.Second)))
	}
	return msgs
}

func shellNow() time.Time { return time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC) }

// Cline's shell tools are terminal tools by name, whatever their output
// (issue 47, item 3: 19 results of run_commands were never cleared).
func TestClineShellToolsAreTerminal(t *testing.T) {
	body := strings.Repeat("ok\n", 300)
	for _, tool := range []string{"run_commands", "execute_command", "Run_Commands"} {
		t.Run(tool, func(t *testing.T) {
			res := Prune(shellHistory(tool, body), Options{Now: shellNow})
			if res.PrunedCount != 1 {
				t.Fatalf("pruned %d results of %s, want 1", res.PrunedCount, tool)
			}
			if len(res.ByContent) != 0 {
				t.Errorf("ByContent = %v, want none: the tool is terminal by name", res.ByContent)
			}
		})
	}
}

// A result shaped like a shell transcript is terminal output whatever its
// tool's name; one that merely mentions an exit code, or has one mark of
// a transcript only, is not (issue 47, item 3).
func TestShellTranscriptOfUnknownTool(t *testing.T) {
	out := strings.Repeat("line of output\n", 200)
	gemini := func(code string) string {
		return "Command: go test ./...\nDirectory: (root)\nOutput: " + out + "Error: (none)\nExit Code: " + code +
			"\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242"
	}
	cline := "Command executed.\nOutput:\n" + out
	clineJSON, _ := json.Marshal(cline)
	cases := []struct {
		name, output string
		pruned       bool // cleared when stale
		byContent    bool // reported as learned
	}{
		{"gemini success", gemini("0"), true, true},
		{"gemini failure is an error, kept", gemini("1"), false, true},
		{"gemini killed by a signal, kept", gemini("(none)"), false, true},
		{"gemini, newer: output first", "Output: " + out + "Exit Code: 0\nProcess Group PGID: 7", true, true},
		{"cline", cline, true, true},
		{"cline still running", "Command is still running in the user's terminal.\nHere's the output so far:\n" + out, true, true},
		{"cline, JSON-encoded", string(clineJSON), true, true},
		{"stream markers and a status", "STDOUT:\n" + out + "STDERR:\n\nexit status 0", true, true},
		{"status with a note", "<stdout>\n" + out + "</stdout>\nExit code: 0 (Success)", true, true},
		{"stream marker, failed", "stdout:\n" + out + "\nExit code 2", false, true},

		// Not transcripts.
		{"plain output", out, false, false},
		{"a page mentioning an exit code", "# Exit codes\n\nThe tool exits with:\n\nExit code: 0 means success\n" + out, false, false},
		{"status line without a marker", out + "Exit status: 0", false, false},
		{"marker without a status", "Output: " + out, false, false},
		{"stream marker in the middle only", out + "STDOUT:\n" + out + "Exit code: 0\n" + out, false, false},
		{"a numbered file listing", "     1\tCommand: x\n     2\tExit Code: 0\n" + out, false, false},
		{"status word not a number", "Output: x\nExit Code: zero\n" + out, false, false},
		{"prose after the label", "Output: x\nexit code documentation\n" + out, false, false},
		{"cline phrase without its output line", "Command executed.\n" + out, false, false},
		{"JSON string of plain text", func() string { b, _ := json.Marshal(out); return string(b) }(), false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Prune(shellHistory("a_tool_of_mine", c.output), Options{Now: shellNow})
			if got := res.PrunedCount == 1; got != c.pruned {
				t.Errorf("pruned %d, want cleared = %v", res.PrunedCount, c.pruned)
			}
			if got := slices.Equal(res.ByContent, []string{"a_tool_of_mine"}); got != c.byContent {
				t.Errorf("ByContent = %v, want the tool learned = %v", res.ByContent, c.byContent)
			}
		})
	}
}

// ByContent names each learned tool once, sorted; a tool named in
// ToolNames is never in it.
func TestByContentSortedOnce(t *testing.T) {
	tr := "Output: x\nExit Code: 0\n"
	msgs := append(shellHistory("zeta", tr), shellHistory("alpha", tr)...)
	msgs = append(msgs, shellHistory("Bash", tr)...)
	// Ids repeat across the three histories: rename the later ones.
	for i := 12; i < len(msgs); i++ {
		bl := msgs[i].Content.Blocks()
		b := bl[0]
		if b.Type == agentctx.BlockToolUse {
			b.ID += fmt.Sprint("_", i/12)
		} else {
			b.ToolUseID += fmt.Sprint("_", i/12)
		}
		msgs[i] = msgs[i].WithBlock(0, b)
	}
	res := Select(msgs, Options{Now: shellNow})
	if want := []string{"alpha", "zeta"}; !slices.Equal(res.ByContent, want) {
		t.Fatalf("ByContent = %v, want %v", res.ByContent, want)
	}
}
