package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

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

func TestExtractiveSections(t *testing.T) {
	msgs := parse(t, session)
	got, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "/arch/compact-1.json"})
	if err != nil {
		t.Fatal(err)
	}
	sections := splitSections(got)
	checks := []struct {
		section string
		want    []string
		not     []string
	}{
		{"header", []string{compact.SummaryTitle, "24 earlier messages", "2026-02-12T15:00:00Z to 2026-02-12T15:30:00Z",
			"12 tool calls (3 failed)", "archived in /arch/compact-1.json"}, nil},
		{"Goals and key decisions", []string{
			"User: Add a --verbose flag to the CLI and make the tests pass.",
			"User: Also document the flag in the README.",
			"Assistant: I'll read the entry point first.",
		}, []string{"Then add the flag"}},
		{"File operations", []string{
			"Read: /repo/cmd/main.go, /repo/README.md",
			"Created: /repo/cmd/flags.go, /repo/docs/verbose.md",
			"Modified: /repo/cmd/main.go, /repo/cmd/flags.go, /repo/README.md",
			"Deleted: /repo/old_flags.go",
		}, []string{"Under "}},
		{"Tool calls", []string{
			"12 calls: Bash ×4 (2 failed), Edit ×2, str_replace_editor ×2, Read ×1, Write ×1, TodoWrite ×1, bash ×1 (1 failed)",
			"Bash `go test ./...` → failed: --- FAIL: TestFlags",
			"Bash `go test ./...` → ok: ok cli 0.01s",
			"Read `/repo/cmd/main.go` → ok",
			"Bash `git push` → failed: fatal: The current branch has no upstream branch.",
		}, []string{"package main", "has been updated"}},
		{"Current state", []string{
			"Latest request: Also document the flag in the README.",
			"Todo list: [completed] Add flag; [in progress] Push branch; [pending] Update docs",
			"Last assistant message: The flag is added and documented; the push still needs an upstream branch.",
			"2 error(s) not resolved",
		}, nil},
		{"Errors and fixes", []string{
			"Bash `go test ./...` failed: --- FAIL: TestFlags → fixed: succeeded later after changes to /repo/cmd/flags.go",
			"Bash `git push` failed: fatal: The current branch has no upstream branch. → not resolved in these messages",
			"bash `python -c 'import cli'` failed: Traceback (most recent call last): → next: The flag is added and documented; the push still needs an upstream branch.",
		}, nil},
	}
	for _, c := range checks {
		body, ok := sections[c.section]
		if !ok {
			t.Errorf("no section %q in:\n%s", c.section, got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("section %q lacks %q:\n%s", c.section, w, body)
			}
		}
		for _, w := range c.not {
			if strings.Contains(body, w) {
				t.Errorf("section %q has %q:\n%s", c.section, w, body)
			}
		}
	}
	again, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "/arch/compact-1.json"})
	if again != got {
		t.Error("the extractive summary is not deterministic")
	}
}

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

func TestExtractiveBounded(t *testing.T) {
	// A long session: many requests, calls, files and errors.
	var msgs []agentctx.Message
	for i := range 400 {
		id := fmt.Sprintf("t%d", i)
		in, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("/work/project/src/module%03d/file%03d.go", i%40, i), "content": strings.Repeat("x", 5000)})
		content := fmt.Sprintf("result %d %s", i, strings.Repeat("output line\n", 200))
		msgs = append(msgs,
			agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("Request %d: %s", i, strings.Repeat("please do the thing ", 100)))),
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.TextBlock(fmt.Sprintf("Step %d. %s", i, strings.Repeat("reasoning ", 300))), agentctx.ToolUseBlock(id, []string{"Write", "Edit", "Read", "Bash"}[i%4], in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(content), i%7 == 0))),
		)
	}
	for _, max := range []int{0, 3000, 20000} {
		got, err := compact.Extractive{MaxChars: max}.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "/a/b.json"})
		if err != nil {
			t.Fatal(err)
		}
		limit := max
		if limit == 0 {
			limit = compact.DefaultMaxSummaryChars
		}
		if n := utf8.RuneCountInString(got); n > limit {
			t.Errorf("MaxChars %d: summary has %d characters", max, n)
		}
		for _, w := range []string{"Request 0:", "Request 399:", "more not shown", "1200 earlier messages", "400 tool calls (58 failed)"} {
			if !strings.Contains(got, w) {
				t.Errorf("MaxChars %d: summary lacks %q", max, w)
			}
		}
	}
}

func TestExtractiveMergesPreviousSummary(t *testing.T) {
	prev, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: parse(t, session)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(prev)),
		parse(t, `[{"role":"assistant","content":[{"type":"tool_use","id":"n1","name":"Write","input":{"file_path":"/repo/CHANGELOG.md","content":"x"}}]}]`)[0],
		parse(t, `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"n1","content":"ok"}]}]`)[0],
	}
	if !compact.IsSummary(msgs[0]) {
		t.Fatal("IsSummary does not recognise an extractive summary")
	}
	got, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	secs := splitSections(got)
	for sec, wants := range map[string][]string{
		"header":                  {"An earlier summary is merged in."},
		"Goals and key decisions": {"User: Add a --verbose flag to the CLI", "User: Also document the flag in the README."},
		"File operations":         {"Created: /repo/cmd/flags.go, /repo/docs/verbose.md, /repo/CHANGELOG.md", "Deleted: /repo/old_flags.go", "Read: /repo/cmd/main.go, /repo/README.md"},
		"Tool calls":              {"1 call: Write ×1", "12 calls: Bash ×4"},
		"Errors and fixes":        {"Bash `git push` failed"},
	} {
		for _, w := range wants {
			if !strings.Contains(secs[sec], w) {
				t.Errorf("section %q lacks %q:\n%s", sec, w, secs[sec])
			}
		}
	}
	if strings.Count(got, compact.SummaryTitle) != 1 {
		t.Errorf("title repeated:\n%s", got)
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

func TestExtractiveFileListsUnderCommonDir(t *testing.T) {
	op := func(id, tool, path string) []agentctx.Message {
		in, _ := json.Marshal(map[string]string{"file_path": path})
		return []agentctx.Message{
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, tool, in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("ok"), false))),
		}
	}
	var first []agentctx.Message
	first = append(first, op("a", "Read", "/home/user/project/src/a.go")...)
	first = append(first, op("b", "Write", "/home/user/project/src/b.go")...)
	first = append(first, op("c", "Read", "/etc/hosts")...)
	prev, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: first})
	files := splitSections(prev)["File operations"]
	for _, w := range []string{"Under /home/user/project/src/:", "Read: a.go, /etc/hosts", "Created: b.go"} {
		if !strings.Contains(files, w) {
			t.Errorf("first summary lacks %q:\n%s", w, files)
		}
	}
	second := append([]agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(prev))}, op("d", "Edit", "/home/user/project/src/b.go")...)
	second = append(second, op("e", "Write", "/home/user/project/docs/c.md")...)
	got, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: second})
	files = splitSections(got)["File operations"]
	for _, w := range []string{"Under /home/user/project/:", "Read: src/a.go, /etc/hosts", "Created: src/b.go, docs/c.md", "Modified: src/b.go"} {
		if !strings.Contains(files, w) {
			t.Errorf("second summary lacks %q:\n%s", w, files)
		}
	}
}
