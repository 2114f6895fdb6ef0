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

// Under ByShape a result shaped like a shell transcript is terminal
// output whatever its tool's name; one that merely mentions an exit code,
// or has one mark of a transcript only, is not (issue 47, item 3). By
// default (the seed's rule, the single-shot prune) the shape counts for
// nothing: no case is cleared or learned.
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
			res := Prune(shellHistory("a_tool_of_mine", c.output), Options{Now: shellNow, ByShape: true})
			if got := res.PrunedCount == 1; got != c.pruned {
				t.Errorf("ByShape: pruned %d, want cleared = %v", res.PrunedCount, c.pruned)
			}
			if got := slices.Equal(res.ByContent, []string{"a_tool_of_mine"}); got != c.byContent {
				t.Errorf("ByShape: ByContent = %v, want the tool learned = %v", res.ByContent, c.byContent)
			}
			if res := Prune(shellHistory("a_tool_of_mine", c.output), Options{Now: shellNow}); res.PrunedCount != 0 || res.ByContent != nil {
				t.Errorf("default: pruned %d, ByContent %v; want none: the seed's rule reads no shape", res.PrunedCount, res.ByContent)
			}
		})
	}
}

// A failed transcript of a tool terminal by its name is an error, kept,
// with ByShape or without: the seed keeps a failed command's output
// (Gemini CLI's run_shell_command writes "Exit Code: 1" after its output).
// Of a tool that is not, the status marks nothing by default: the result
// is ranked as any other.
func TestFailedTranscriptOfTerminalToolKept(t *testing.T) {
	out := strings.Repeat("line of output\n", 200)
	failed := "Command: make\nDirectory: (root)\nOutput: " + out + "Exit Code: 2\nSignal: (none)"
	for _, byShape := range []bool{false, true} {
		res := Prune(shellHistory("run_shell_command", failed), Options{Now: shellNow, ByShape: byShape, KeepRecent: -1})
		if res.PrunedCount != 0 {
			t.Errorf("ByShape %v: pruned %d failed commands, want 0", byShape, res.PrunedCount)
		}
	}
	// Of a file tool, by default, the five newest results fill the window
	// and the oldest is read, not cleared: it is not an error, so a
	// terminal result older than it is pruned past the window as usual.
	msgs := shellHistory("read_file", failed)
	res := Select(msgs, Options{Now: shellNow, KeepRecent: 6})
	if res.PrunedCount != 0 || res.ByContent != nil {
		t.Errorf("read_file: pruned %d, ByContent %v; want none", res.PrunedCount, res.ByContent)
	}
}

// Classify tells a shell transcript apart from the seed's marks, and a
// failed one from one that succeeded or reports no status.
func TestClassifyTranscript(t *testing.T) {
	out := strings.Repeat("output\n", 30)
	cases := []struct {
		name, text string
		want       Class
	}{
		{"gemini, success", "Command: ls\nDirectory: (root)\nOutput: " + out + "Error: (none)\nExit Code: 0\nSignal: (none)", Class{Transcript: true}},
		{"gemini, failure", "Command: ls\nOutput: " + out + "Exit Code: 127", Class{Transcript: true, TranscriptFailed: true}},
		{"gemini, killed", "Command: ls\nOutput: " + out + "Exit Code: (none)\nSignal: 9", Class{Transcript: true, TranscriptFailed: true}},
		{"cline, no status", "Command executed.\nOutput:\n" + out, Class{Transcript: true}},
		{"cline, JSON-encoded", `"Command executed.\nOutput:\nok\n"`, Class{Transcript: true}},
		{"markers, failed", "--- stdout ---\n" + out + "--- stderr ---\nboom\nexit status 1", Class{Transcript: true, TranscriptFailed: true}},
		{"codex's, a harness status: the seed's reading", "Exit code: 1\nWall time: 0.2 seconds\nOutput:\n" + out, Class{Terminal: true, Error: true}},
		{"seed JSON", `{"stdout":"ok","stderr":"","exitCode":0}`, Class{Terminal: true}},

		{"plain text", out, Class{}},
		{"README on exit codes", "# mytool\n\nExit code: 0 means success.\n\nstdout:\n" + out, Class{}},
		{"yaml with a stdout key", "logging:\n  stdout:\n    level: info\n" + out + "# exit code 0\n", Class{}},
		{"indented marker and status", "config:\n  stdout:\n    file: out.log\n  exit code: 1\n" + out, Class{}},
		{"a status alone", out + "Exit code: 3", Class{}},
		{"a header alone", "Command: build\n" + out, Class{}},
		{"numbered file read", "     1\tOutput: x\n     2\tExit Code: 0\n" + out, Class{}},
		{"a quote that is not one JSON string", `"Command executed.\nOutput:\nok" and more`, Class{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Classify(agentctx.Text(c.text)); got != c.want {
				t.Errorf("Classify = %+v, want %+v", got, c.want)
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
	res := Select(msgs, Options{Now: shellNow, ByShape: true})
	if want := []string{"alpha", "zeta"}; !slices.Equal(res.ByContent, want) {
		t.Fatalf("ByContent = %v, want %v", res.ByContent, want)
	}
}
