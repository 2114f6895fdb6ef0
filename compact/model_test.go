package compact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
)

// recordingModel records prompts and answers from a function.
type recordingModel struct {
	mu      sync.Mutex
	prompts []string
	systems []string
	answer  func(n int, prompt string) (string, error)
}

func (m *recordingModel) Complete(_ context.Context, system, prompt string) (string, error) {
	m.mu.Lock()
	m.prompts = append(m.prompts, prompt)
	m.systems = append(m.systems, system)
	n := len(m.prompts)
	m.mu.Unlock()
	return m.answer(n, prompt)
}

func TestModelSummarizerOneCall(t *testing.T) {
	m := &recordingModel{answer: func(int, string) (string, error) { return "## Goals and key decisions\n- port it", nil }}
	s := &compact.ModelSummarizer{Model: m}
	msgs := parse(t, session)
	got, err := s.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "/a/compact-x-1.json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.prompts) != 1 {
		t.Fatalf("%d calls, want 1", len(m.prompts))
	}
	if m.systems[0] != compact.SystemPrompt {
		t.Error("system prompt not sent")
	}
	p := m.prompts[0]
	for _, w := range []string{
		"Goals and key decisions", "File operations", "Tool calls", "Current state", "Errors and fixes",
		"<conversation>", "[1] user\nAdd a --verbose flag", "[call t1] Read(file_path: /repo/cmd/main.go)",
		`<tool_result id="t4" status="error">Exit code 1`, "[call c1] str_replace_editor(command: create, path: /repo/docs/verbose.md, file_text: # verbose)",
		"User requests", "Key identifiers", "verbatim",
		`<tool_result id="c3" status="error">`, "<thinking>Look at main.go first.</thinking>",
	} {
		if !strings.Contains(p, w) {
			t.Errorf("prompt lacks %q", w)
		}
	}
	// Nothing volatile is added: not a file archive's name.
	want := compact.SummaryTitle + "\n\n## Goals and key decisions\n- port it"
	if got != want {
		t.Errorf("summary =\n%s\nwant\n%s", got, want)
	}
	// A stable archive id is named.
	got, _ = s.Summarize(context.Background(), compact.Request{Messages: msgs, Archive: "compact_85d8bbb8"})
	if want += "\n\nThe original messages are archived as compact_85d8bbb8."; got != want {
		t.Errorf("summary =\n%s\nwant\n%s", got, want)
	}
}

func TestModelSummarizerShortensLongResults(t *testing.T) {
	m := &recordingModel{answer: func(int, string) (string, error) { return compact.SummaryTitle + "\nok", nil }}
	s := &compact.ModelSummarizer{Model: m, MaxResultChars: 1000}
	big := strings.Repeat("0123456789", 5000) + "THE END"
	msgs := []agentctx.Message{call(1, "a"), agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("a", agentctx.Text("HEAD"+big), false)))}
	got, err := s.Summarize(context.Background(), compact.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got != compact.SummaryTitle+"\nok" {
		t.Errorf("summary = %q", got)
	}
	p := m.prompts[0]
	if !strings.Contains(p, "HEAD") || !strings.Contains(p, "THE END") || !strings.Contains(p, "characters omitted") || len(p) > 10_000 {
		t.Errorf("long result not shortened to its head and tail (prompt %d bytes)", len(p))
	}
}

func TestModelSummarizerParts(t *testing.T) {
	enc := tokens.O200kBase()
	m := &recordingModel{answer: func(n int, prompt string) (string, error) {
		if strings.HasPrefix(prompt, compact.MergePrompt) {
			return fmt.Sprintf("MERGED %d", n), nil
		}
		return fmt.Sprintf("PART SUMMARY %d", n), nil
	}}
	const budget = 3000
	s := &compact.ModelSummarizer{Model: m, InputTokens: budget}
	var msgs []agentctx.Message
	for i := range 60 {
		msgs = append(msgs, agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("message %d %s", i, strings.Repeat("lorem ipsum dolor ", 100)))))
	}
	// One message larger than the whole budget.
	msgs = append(msgs, agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("HUGE "+strings.Repeat("word ", 20_000))))
	got, err := s.Summarize(context.Background(), compact.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var parts, merges int
	for i, p := range m.prompts {
		if n := enc.Count(compact.SystemPrompt) + enc.Count(p); n > budget {
			t.Errorf("call %d has %d tokens, over the budget of %d", i+1, n, budget)
		}
		if strings.HasPrefix(p, compact.MergePrompt) {
			merges++
		} else {
			parts++
		}
	}
	if parts < 5 || merges < 1 {
		t.Errorf("%d part calls and %d merges; want the conversation in parts, then merged", parts, merges)
	}
	if !strings.HasPrefix(got, compact.SummaryTitle+"\n\nMERGED ") {
		t.Errorf("summary = %q, want the last merge", got)
	}
	for i := range 60 {
		found := false
		for _, p := range m.prompts {
			if strings.Contains(p, fmt.Sprintf("message %d ", i)) {
				found = true
			}
		}
		if !found {
			t.Errorf("message %d was never sent", i)
		}
	}
}

func TestModelSummarizerFailures(t *testing.T) {
	boom := &compact.APIError{Provider: "x", StatusCode: 500, Err: errors.New("boom")}
	tests := []struct {
		name   string
		answer func(int, string) (string, error)
		want   error
	}{
		{"empty answer", func(int, string) (string, error) { return " \n", nil }, compact.ErrEmptySummary},
		{"model error", func(int, string) (string, error) { return "", boom }, boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &compact.ModelSummarizer{Model: &recordingModel{answer: tc.answer}}
			_, err := s.Summarize(context.Background(), compact.Request{Messages: []agentctx.Message{user(3)}})
			if !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := (&compact.ModelSummarizer{}).Summarize(context.Background(), compact.Request{}); err == nil {
		t.Error("no error without a Model")
	}
}

func TestRender(t *testing.T) {
	msgs := parse(t, `[
		{"role":"system","content":"Be brief."},
		{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.go"}},{"type":"redacted_thinking","data":"x"},{"type":"image","source":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"package a"},{"type":"image","source":{}}]}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"sh","arguments":"{\"cmd\":\"ls\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"Error: no such file","messageStatus":"error"}
	]`)
	want := `[1] system
Be brief.

[2] assistant
Reading.
[call t1] Read(file_path: a.go)
<thinking>(redacted)</thinking>
[image]

[3] user
<tool_result id="t1">package a
[image]</tool_result>

[4] assistant
[call c1] sh(cmd: ls)

[5] tool
<tool_result id="c1" status="error">Error: no such file</tool_result>

`
	if got := compact.Render(msgs, 0); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

func TestModelSummarizerMergeRounds(t *testing.T) {
	enc := tokens.O200kBase()
	const budget = 3000
	m := &recordingModel{answer: func(n int, prompt string) (string, error) {
		// Long summaries: a few of them fill a merge call.
		return fmt.Sprintf("S%d %s", n, strings.Repeat("detail ", 900)), nil
	}}
	s := &compact.ModelSummarizer{Model: m, InputTokens: budget}
	var msgs []agentctx.Message
	for i := range 40 {
		msgs = append(msgs, agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(fmt.Sprintf("m%d %s", i, strings.Repeat("lorem ipsum ", 600)))))
	}
	if _, err := s.Summarize(context.Background(), compact.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	merges := 0
	for i, p := range m.prompts {
		if n := enc.Count(compact.SystemPrompt) + enc.Count(p); n > budget {
			t.Errorf("call %d has %d tokens, over the budget of %d", i+1, n, budget)
		}
		if strings.HasPrefix(p, compact.MergePrompt) {
			merges++
		}
	}
	if merges < 3 {
		t.Errorf("%d merge calls; want several rounds", merges)
	}
}
