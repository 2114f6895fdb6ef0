package compact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

// session is a small coding session in the Anthropic shape (Claude Code
// tools), with an OpenAI-shaped part (str_replace_editor, mini-swe-agent
// output) at the end.
const session = `[
{"role":"user","content":"Add a --verbose flag to the CLI and make the tests pass.","timestamp":"2026-02-12T15:00:00Z"},
{"role":"assistant","content":[{"type":"thinking","thinking":"Look at main.go first.","signature":"x"},{"type":"text","text":"I'll read the entry point first. Then add the flag."},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/repo/cmd/main.go"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"package main\nfunc main() {}"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Write","input":{"file_path":"/repo/cmd/flags.go","content":"package main\n"}},{"type":"tool_use","id":"t3","name":"Edit","input":{"file_path":"/repo/cmd/main.go","old_string":"a","new_string":"b"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"The file has been updated."},{"type":"tool_result","tool_use_id":"t2","content":"File created successfully"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t4","name":"Bash","input":{"command":"go test ./...","description":"Run tests"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t4","is_error":true,"content":"Exit code 1\n--- FAIL: TestFlags\n    flags_test.go:12: undefined: verbose\nFAIL"}]},
{"role":"assistant","content":[{"type":"text","text":"The test needs the variable exported. Fixing it."},{"type":"tool_use","id":"t5","name":"Edit","input":{"file_path":"/repo/cmd/flags.go","old_string":"x","new_string":"y"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t5","content":"The file has been updated."}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t6","name":"Bash","input":{"command":"go test ./..."}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t6","content":"ok  \tcli\t0.01s"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t7","name":"Bash","input":{"command":"rm /repo/old_flags.go && cat /repo/README.md"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t7","content":"# cli"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t8","name":"Bash","input":{"command":"git push"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t8","content":"Exit code 128\nfatal: The current branch has no upstream branch."}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t9","name":"TodoWrite","input":{"todos":[{"content":"Add flag","status":"completed"},{"content":"Push branch","status":"in_progress"},{"content":"Update docs","status":"pending"}]}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"Todos have been modified successfully."}]},
{"role":"user","content":"Also document the flag in the README."},
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"str_replace_editor","arguments":"{\"command\":\"create\",\"path\":\"/repo/docs/verbose.md\",\"file_text\":\"# verbose\"}"}},{"id":"c2","type":"function","function":{"name":"str_replace_editor","arguments":"{\"command\":\"str_replace\",\"path\":\"/repo/README.md\",\"old_str\":\"a\",\"new_str\":\"b\"}"}}]},
{"role":"tool","tool_call_id":"c1","content":"File created successfully at: /repo/docs/verbose.md"},
{"role":"tool","tool_call_id":"c2","content":"The file /repo/README.md has been edited."},
{"role":"assistant","content":null,"tool_calls":[{"id":"c3","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python -c 'import cli'\"}"}}]},
{"role":"tool","tool_call_id":"c3","content":"<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'cli'\n</output>"},
{"role":"assistant","content":"The flag is added and documented; the push still needs an upstream branch.","timestamp":"2026-02-12T15:30:00Z"}
]`

// splitSections maps each "## " heading to its body; the text before the
// first heading is "header".
func splitSections(s string) map[string]string {
	out := map[string]string{}
	name := "header"
	var body strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "## ") {
			out[name] = body.String()
			body.Reset()
			name = strings.TrimPrefix(line, "## ")
			continue
		}
		body.WriteString(line + "\n")
	}
	out[name] = body.String()
	return out
}

func TestExtractiveEmptySections(t *testing.T) {
	got, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: []agentctx.Message{user(3)}})
	if err != nil {
		t.Fatal(err)
	}
	secs := splitSections(got)
	for _, s := range []string{"Goals and key decisions", "File operations", "Tool calls", "Current state", "Errors and fixes"} {
		if _, ok := secs[s]; !ok {
			t.Errorf("section %q missing:\n%s", s, got)
		}
	}
	if !strings.Contains(secs["Errors and fixes"], "- none") {
		t.Errorf("empty section not marked:\n%s", got)
	}
}

func TestExtractiveCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (compact.Extractive{}).Summarize(ctx, compact.Request{Messages: []agentctx.Message{user(1)}}); err == nil {
		t.Error("no error from a cancelled context")
	}
}

func TestIsSummary(t *testing.T) {
	tests := []struct {
		m    agentctx.Message
		want bool
	}{
		{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(compact.SummaryTitle+"\n\nx")), true},
		{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("  \n"+compact.SummaryTitle)), true},
		{agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.TextBlock(compact.SummaryTitle))), true},
		{agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(compact.SummaryTitle)), false},
		{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Summary")), false},
		{agentctx.NewMessage(agentctx.RoleUser, agentctx.Null()), false},
	}
	for i, tc := range tests {
		if got := compact.IsSummary(tc.m); got != tc.want {
			t.Errorf("%d: IsSummary = %v, want %v", i, got, tc.want)
		}
	}
}
