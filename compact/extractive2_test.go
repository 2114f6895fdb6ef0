package compact_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/transcript"
)

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
		{"header", []string{compact.SummaryTitle, "24 earlier messages compacted: 2 user requests, 11 assistant messages, 12 tool calls (3 failed)."},
			[]string{"2026-02-12", "/arch/compact-1.json"}}, // nothing volatile
		{"User requests", []string{
			"1. Add a --verbose flag to the CLI and make the tests pass.\n2. Also document the flag in the README.",
		}, nil},
		{"File operations", []string{
			"/repo/cmd/main.go: modified (`a` → `b`)",
			"/repo/cmd/flags.go: created, modified (`x` → `y`)",
			"/repo/old_flags.go: deleted",
			"/repo/README.md: modified (`a` → `b`)",
			"/repo/docs/verbose.md: created",
		}, nil},
		{"Tool calls", []string{
			"12 calls: Bash ×4 (2 failed), Edit ×2, str_replace_editor ×2, Read ×1, Write ×1, TodoWrite ×1, bash ×1 (1 failed)",
			"Bash `go test ./...` ×2 (1 failed) → ok: ok cli 0.01s",
			"Bash `git push` → failed: fatal: The current branch has no upstream branch.",
		}, []string{"package main", "has been updated", "{\""}},
		{"Current state", []string{
			"Current task (in progress on the todo list): Push branch",
			"Todo list:\n   [x] Add flag\n   [~] Push branch\n   [ ] Update docs",
			"Last assistant message:\n   The flag is added and documented; the push still needs an upstream branch.",
			"2 error(s) still open",
		}, nil},
		{"Errors and fixes", []string{
			"Bash `go test ./...` failed: --- FAIL: TestFlags → fixed: succeeded later after changes to /repo/cmd/flags.go",
			"Bash `git push` failed: fatal: The current branch has no upstream branch. → still open",
			"bash `python -c 'import cli'` failed: Traceback (most recent call last): → then: The flag is added and documented; the push still needs an upstream branch.",
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
	again, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "/arch/compact-2.json"})
	if again != got {
		t.Error("the extractive summary is not byte-identical for the same messages")
	}
	// An archive named by its content is named; a file path is not.
	named, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "compact_85d8bbb822d0b29e"})
	if !strings.Contains(splitSections(named)["header"], "The original messages are archived as compact_85d8bbb822d0b29e.") {
		t.Errorf("the stable archive is not named:\n%s", named)
	}
	if sc := compact.ScoreSummary(got, msgs, nil, compact.ScoreOptions{}); len(sc.Noise) > 0 {
		t.Errorf("noise: %q", sc.Noise)
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
	enc := tokens.O200kBase()
	for _, tc := range []struct{ tokens, chars int }{{0, 0}, {300, 0}, {1000, 0}, {8000, 0}, {0, 3000}} {
		got, err := compact.Extractive{MaxTokens: tc.tokens, MaxChars: tc.chars}.Summarize(context.Background(), compact.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		limit := tc.tokens
		if limit == 0 {
			limit = compact.DefaultSummaryTokens
		}
		if n := enc.Count(got); n > limit {
			t.Errorf("%+v: summary has %d tokens", tc, n)
		}
		if tc.chars > 0 && utf8.RuneCountInString(got) > tc.chars {
			t.Errorf("%+v: summary has %d characters", tc, utf8.RuneCountInString(got))
		}
		for _, w := range []string{"Request 0:", "1200 earlier messages", "400 tool calls (58 failed)"} {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: summary lacks %q", tc, w)
			}
		}
		if tc.chars == 0 && !strings.Contains(got, "Request 399:") {
			t.Errorf("%+v: summary lacks the newest request", tc)
		}
	}
}

// A todo list of 100 items keeps the open ones and fits a small budget.
func TestExtractiveLongTodoList(t *testing.T) {
	var todos []map[string]string
	for i := range 100 {
		status := "completed"
		if i >= 90 {
			status = "pending"
		}
		todos = append(todos, map[string]string{"content": fmt.Sprintf("item %d %s", i, strings.Repeat("word ", 20)), "status": status})
	}
	in, _ := json.Marshal(map[string]any{"todos": todos})
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Do it all.")),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock("t", "TodoWrite", in))),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("t", agentctx.Text("ok"), false))),
	}
	for _, budget := range []int{200, 4000} {
		got, _ := compact.Extractive{MaxTokens: budget}.Summarize(context.Background(), compact.Request{Messages: msgs})
		if n := tokens.O200kBase().Count(got); n > budget {
			t.Errorf("budget %d: %d tokens", budget, n)
		}
		if budget == 4000 {
			for _, w := range []string{"[x] (70 earlier done items)", "[ ] item 99", "[x] item 70 "} {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "item 69 ") {
				t.Errorf("an old done item is listed:\n%s", got)
			}
		}
	}
}

// Stand-ins of pruned or offloaded results are never quoted, and a call
// whose result is gone is not a failure.
func TestExtractiveSkipsStandIns(t *testing.T) {
	msgs := parse(t, `[
{"role":"user","content":"Run the build."},
{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"make build"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"此命令返回内容已过时"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Bash","input":{"command":"make test"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"<knowledge_list>\n- id: tool_result_b\n</knowledge_list>"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"Bash","input":{"command":"make lint"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"[Content offloaded to: ./tool-result-c.md]"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"d","name":"Bash","input":{"command":"make vet"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"d","content":"This command's output is out of date.\n[Stored whole: get_knowledge_by_id(artifact_id=\"tool_result_d\")]"}]},
{"role":"assistant","content":"Done."}
]`)
	got, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"此命令返回内容已过时", "out of date", "knowledge_list", "offloaded"} {
		if strings.Contains(got, bad) {
			t.Errorf("summary has %q:\n%s", bad, got)
		}
	}
	for _, w := range []string{"Bash `make build` → done", "Bash `make vet` → done", "4 tool calls (0 failed)"} {
		if !strings.Contains(got, w) {
			t.Errorf("summary lacks %q:\n%s", w, got)
		}
	}
	if r := compact.Render(msgs, 0); strings.Contains(r, "此命令") || strings.Contains(r, "out of date") || !strings.Contains(r, "(output not available here)") {
		t.Errorf("Render shows a stand-in:\n%s", r)
	}
}

// An OpenHands task_tracker plan is a todo list too; without one, the
// current task is the latest request.
func TestExtractiveTaskTracker(t *testing.T) {
	msgs := parse(t, `[
{"role":"user","content":"Port the parser."},
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"task_tracker","arguments":"{\"command\":\"plan\",\"task_list\":[{\"id\":\"1\",\"title\":\"Read the grammar\",\"status\":\"done\"},{\"id\":\"2\",\"title\":\"Write the lexer\",\"status\":\"in_progress\"}]}"}}]},
{"role":"tool","tool_call_id":"c1","content":"Task list updated."}
]`)
	got, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs})
	for _, w := range []string{"Current task (in progress on the todo list): Write the lexer", "Todo list:\n   [x] Read the grammar\n   [~] Write the lexer"} {
		if !strings.Contains(got, w) {
			t.Errorf("summary lacks %q:\n%s", w, got)
		}
	}
	got, _ = compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs[:1]})
	if !strings.Contains(got, "Current task: the latest request") {
		t.Errorf("summary lacks the current task:\n%s", got)
	}
}

// Claude Code's own summary of an earlier compaction is carried as an
// earlier summary, not quoted as a request, without its instructions.
func TestExtractiveForeignSummary(t *testing.T) {
	foreign := "This session is being continued from a previous conversation that ran out of context.\n\nAnalysis:\nlong thoughts\n\nSummary:\n1. Primary Request and Intent:\n   Port the parser.\n8. Current Work:\n   Writing lexer.go.\nIf you need specific details from before compaction, read the full transcript at: /home/u/.claude/x.jsonl\nPlease continue the conversation from where we left it off."
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(foreign)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Go on.")),
	}
	got, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs})
	secs := splitSections(got)
	if want := "1. Go on.\n\n"; secs["User requests"] != want {
		t.Errorf("requests = %q, want %q", secs["User requests"], want)
	}
	for _, w := range []string{"- 1. Primary Request and Intent:\n- Port the parser.\n- 8. Current Work:\n- Writing lexer.go.\n"} {
		if !strings.Contains(secs["Earlier summary"], w) {
			t.Errorf("earlier summary lacks %q:\n%s", w, got)
		}
	}
	for _, bad := range []string{"long thoughts", ".claude", "Please continue"} {
		if strings.Contains(got, bad) {
			t.Errorf("summary has %q:\n%s", bad, got)
		}
	}
}

func TestUserRequests(t *testing.T) {
	msgs := parse(t, `[
{"role":"user","content":"Fix the bug.\r\nIt is in parse.go.<system-reminder>ignore me</system-reminder>"},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"not a request"}]},
{"role":"user","content":"<task-notification><status>completed</status></task-notification>"},
{"role":"user","content":"<command-name>/review</command-name>\n<command-args>PR 12</command-args>"},
{"role":"user","content":"This session is being continued from a previous conversation that ran out of context."},
{"role":"user","content":"[Request interrupted by user]"},
{"role":"user","content":"Parameter 'command' is expected to be one of ['view'].","messageStatus":"error"},
{"role":"assistant","content":"ok"},
{"role":"user","content":[{"type":"text","text":"Then add a test."}]}
]`)
	got := compact.UserRequests(msgs)
	want := []string{"Fix the bug.\nIt is in parse.go.", "/review PR 12", "Then add a test."}
	if !slices.Equal(got, want) {
		t.Errorf("UserRequests = %q, want %q", got, want)
	}
}

func TestExtractiveMergesPreviousSummary(t *testing.T) {
	prev, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: parse(t, session)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(prev)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Now write a changelog.")),
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
		"header":           {"An earlier summary is merged in."},
		"User requests":    {"1. Add a --verbose flag to the CLI and make the tests pass.\n2. Also document the flag in the README.\n3. Now write a changelog."},
		"File operations":  {"/repo/CHANGELOG.md: created", "/repo/old_flags.go: deleted"},
		"Tool calls":       {"1 call: Write ×1", "12 calls: Bash ×4"},
		"Errors and fixes": {"Bash `git push` failed"},
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

func TestExtractiveFileListsUnderCommonDir(t *testing.T) {
	op := func(id, tool, path string) []agentctx.Message {
		in, _ := json.Marshal(map[string]string{"file_path": path})
		return []agentctx.Message{
			agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(agentctx.ToolUseBlock(id, tool, in))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text("ok"), false))),
		}
	}
	var msgs []agentctx.Message
	msgs = append(msgs, op("a", "Read", "/home/user/project/src/a.go")...)
	msgs = append(msgs, op("b", "Write", "/home/user/project/src/b.go")...)
	msgs = append(msgs, op("c", "Read", "/etc/hosts")...)
	got, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: msgs})
	files := splitSections(got)["File operations"]
	for _, w := range []string{"- Paths are relative to /home/user/project/src/\n", "- a.go: read\n", "- b.go: created\n", "- /etc/hosts: read\n"} {
		if !strings.Contains(files, w) {
			t.Errorf("summary lacks %q:\n%s", w, files)
		}
	}
	// A later summary carries the files, relative to its own directory.
	second := append([]agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(got))}, op("d", "Edit", "/home/user/project/src/b.go")...)
	second = append(second, op("e", "Write", "/home/user/project/docs/c.md")...)
	again, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: second})
	files2 := splitSections(again)["File operations"]
	for _, w := range []string{"- Paths are relative to /home/user/project/\n", "- src/a.go: read\n", "- src/b.go: created\n", "- src/b.go: modified\n", "- docs/c.md: created\n", "- /etc/hosts: read\n"} {
		if !strings.Contains(files2, w) {
			t.Errorf("second summary lacks %q:\n%s", w, files2)
		}
	}
	if strings.Count(again, "Paths are relative to") != 1 {
		t.Errorf("two directories declared:\n%s", again)
	}
	// ScoreSummary reads the declared directory back.
	tail := op("d", "Edit", "/home/user/project/src/b.go")
	if sc := compact.ScoreSummary(got, msgs, tail, compact.ScoreOptions{}); sc.Paths.Total != 1 || sc.Paths.Kept != 1 {
		t.Errorf("paths score %+v", sc.Paths)
	}
}

func TestFormatCall(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"Bash", `{"command":"go test ./...","description":"Run tests"}`, "Bash(command: go test ./..., description: Run tests)"},
		{"Edit", `{"file_path":"/a.go","old_string":"a\nb","new_string":""}`, "Edit(file_path: /a.go, new_string: \"\")\n  old_string:\n    a\n    b"},
		{"TodoWrite", `{"todos":[{"content":"x","status":"done"},{"content":"y","status":"pending"}]}`, "TodoWrite()\n  todos:\n    - content: x, status: done\n    - content: y, status: pending"},
		{"f", `{"n":3,"ok":true,"list":["a","b"],"o":{"k":"v"}}`, "f(n: 3, ok: true, list: [a, b], o: {k: v})"},
		{"g", `{"s":"a, b"}`, `g(s: "a, b")`},
		{"h", ``, "h()"},
		{"i", `not json`, "i not json"},
	}
	for _, tc := range tests {
		if got := compact.FormatCall(tc.name, []byte(tc.input), 0); got != tc.want {
			t.Errorf("FormatCall(%s, %s) =\n%s\nwant\n%s", tc.name, tc.input, got, tc.want)
		}
	}
}

func TestScoreSummary(t *testing.T) {
	middle := parse(t, `[
{"role":"user","content":"Fix parse_header in /src/parse.go and run TestParse."},
{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"go test -run TestParse ./src"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","is_error":true,"content":"Error: undefined: parseHeader"}]}
]`)
	tail := parse(t, `[{"role":"assistant","content":"parse_header and TestParse in /src/parse.go pass now; parseHeader is gone."}]`)
	good := "# Summary\n\n## User requests\n1. Fix parse_header in /src/parse.go and run\n   TestParse.\n- Error: undefined: parseHeader"
	sc := compact.ScoreSummary(good, middle, tail, compact.ScoreOptions{Counter: words{}})
	if sc.Paths.Share() != 1 || sc.Identifiers.Share() != 1 || sc.Requests.Share() != 1 || sc.Errors.Share() != 1 {
		t.Errorf("good summary scored %+v", sc)
	}
	// parseHeader is only in a tool result of the middle: not scored.
	if sc.Identifiers.Total != 2 || sc.Tokens != len(strings.Fields(good)) {
		t.Errorf("identifiers %+v tokens %d", sc.Identifiers, sc.Tokens)
	}
	bad := "# Summary\n- same line\n- same line\n- 此命令返回内容已过时\n- {\"a\":1}\n- Bash: This command's output is out of date."
	sc = compact.ScoreSummary(bad, middle, tail, compact.ScoreOptions{})
	if sc.Paths.Kept != 0 || sc.Requests.Kept != 0 || len(sc.Identifiers.Missing) != 2 || len(sc.Noise) != 4 {
		t.Errorf("bad summary scored %+v", sc)
	}
}

// TestTranscriptsSummaryTargets checks the targets of issue 14 on the
// shared transcripts: compacted at a limit of 100,000 tokens (the middle is
// summarized even where that is below the trigger), the summary keeps 95%
// of the paths and 70% of the identifiers that the middle and the tail
// share, every request, has no noise, fits 4,000 tokens, and is the same
// bytes when made again.
func TestTranscriptsSummaryTargets(t *testing.T) {
	for _, path := range transcripts(t) {
		doc, err := transcript.ReadOptions{WholeHistory: true}.ReadFile(context.Background(), path, nil) // as the session went
		if err != nil {
			continue
		}
		for ci, conv := range doc.Conversations() {
			p := compact.Split(conv.Messages, compact.Options{Limit: 100_000})
			if len(p.Middle) == 0 {
				continue
			}
			s1, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: p.Middle, Archive: "/x/compact-1.json"})
			s2, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: p.Middle, Archive: "/x/compact-2.json"})
			if s1 != s2 {
				t.Errorf("%s #%d: summary not byte-identical", path, ci)
			}
			sc := compact.ScoreSummary(s1, p.Middle, p.Tail, compact.ScoreOptions{})
			if sc.Paths.Share() < 0.95 || sc.Identifiers.Share() < 0.70 || sc.Requests.Kept != sc.Requests.Total || sc.Tokens > compact.DefaultSummaryTokens || len(sc.Noise) > 0 {
				t.Errorf("%s #%d: %+v", path, ci, sc)
			}
			// Rolling: the summary and half the tail summarized again keep
			// the requests of both, without noise, within the budget.
			next := append([]agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(s1))}, p.Tail[:len(p.Tail)/2]...)
			s3, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: next})
			sc3 := compact.ScoreSummary(s3, append(slices.Clone(p.Middle), p.Tail[:len(p.Tail)/2]...), nil, compact.ScoreOptions{})
			if sc3.Requests.Kept != sc3.Requests.Total || sc3.Tokens > compact.DefaultSummaryTokens || len(sc3.Noise) > 0 {
				t.Errorf("%s #%d rolled: requests %+v, %d tokens, noise %q", path, ci, sc3.Requests, sc3.Tokens, sc3.Noise)
			}
		}
	}
}

// BenchmarkExtractiveTranscript summarizes 1 MiB (of message JSON) of real
// sessions: the shared transcripts' conversations one after the other,
// longest first, until 1 MiB.
func BenchmarkExtractiveTranscript(b *testing.B) {
	var convs [][]agentctx.Message
	for _, path := range transcripts(b) {
		doc, err := transcript.ReadOptions{WholeHistory: true}.ReadFile(context.Background(), path, nil) // as the session went
		if err != nil {
			continue
		}
		for _, c := range doc.Conversations() {
			convs = append(convs, c.Messages)
		}
	}
	slices.SortStableFunc(convs, func(x, y []agentctx.Message) int { return jsonSize(b, y) - jsonSize(b, x) })
	var middle []agentctx.Message
	total := 0
fill:
	for _, c := range convs {
		for _, m := range c {
			data, _ := m.MarshalJSON()
			if total+len(data) > 1<<20 {
				break fill
			}
			total += len(data)
			middle = append(middle, m)
		}
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (compact.Extractive{}).Summarize(context.Background(), compact.Request{Messages: middle}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(middle)), "messages")
	b.ReportMetric(float64(total), "input-bytes")
}

var updateGolden = flag.Bool("update", false, "rewrite the golden summaries in testdata/")

// TestExtractiveGolden pins the whole extractive summary of the example
// session's middle (split at a 100,000-token window, as summary-eval does)
// and of this file's small session. Run with -update after an intended
// change, and read the diff.
func TestExtractiveGolden(t *testing.T) {
	doc, err := transcript.ReadFile(context.Background(), "../examples/session.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		msgs []agentctx.Message
	}{
		{"example-session", compact.Split(doc.Messages, compact.Options{Limit: 100_000}).Middle},
		{"small-session", parse(t, session)},
	} {
		got, err := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: tc.msgs})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", tc.name+".summary.md")
		if *updateGolden {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if got+"\n" != string(want) {
			t.Errorf("%s: summary differs from %s (run with -update and read the diff):\n%s", tc.name, path, got)
		}
	}
}
