package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

// seqArchiver archives nothing and names its archives compact_a1,
// compact_a2, ... with a file under /ws/ns.
type seqArchiver struct {
	mu sync.Mutex
	n  int
}

func (a *seqArchiver) Archive(_ context.Context, _ string, msgs []agentctx.Message) (compact.Archived, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	id := fmt.Sprintf("compact_a%d", a.n)
	return compact.Archived{ID: id, Path: "/ws/ns/" + id + ".txt", Bytes: 1000 * len(msgs)}, nil
}

// storedPointers is an Options.Pointers that says every result is stored
// as tool_result_<id> in /ws/ns, as a pipeline's workspace would.
func storedPointers(msgs []agentctx.Message, h, t int) []compact.Pointer {
	var out []compact.Pointer
	for r := range agentctx.ToolResults(msgs[h:t]) {
		id := "tool_result_" + r.ID
		out = append(out, compact.Pointer{Kind: compact.PointerResult, ArtifactID: id, Path: "/ws/ns/" + id + ".txt",
			ToolCallID: r.ID, Chars: 1234, Lines: 3})
	}
	return out
}

func toolCall(id, name string, input map[string]string, text string) agentctx.Message {
	in, _ := json.Marshal(input)
	var blocks []agentctx.Block
	if text != "" {
		blocks = append(blocks, agentctx.TextBlock(text))
	}
	blocks = append(blocks, agentctx.ToolUseBlock(id, name, in))
	return agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(blocks...))
}

func toolResult(id, content string) agentctx.Message {
	return agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(id, agentctx.Text(content), false)))
}

// pointerSession is a history whose middle has an offloaded result (t1),
// a pruned one (t2) and one left whole (t3), then a short tail.
func pointerSession() []agentctx.Message {
	return []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Find out why `go test ./...` fails and fix it.")),
		toolCall("t1", "Bash", map[string]string{"command": "go test ./..."}, "Running the tests."),
		toolResult("t1", "<knowledge_list>\n<item artifact_id=\"tool_result_t1\">go test ./... (60,127 chars)</item>\n</knowledge_list>"),
		toolCall("t2", "Read", map[string]string{"file_path": "/repo/money/round.go"}, ""),
		toolResult("t2", "此命令返回内容已过时\n[Stored whole: get_knowledge_by_id(artifact_id=\"tool_result_t2\")]"),
		toolCall("t3", "Bash", map[string]string{"command": "git log --oneline -3"}, ""),
		toolResult("t3", "1f3c9aa Merge pull request #212\nc2d41e0 money: half-even\n9d07e3a init"),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("The rounding mode changed in c2d41e0.")),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Go on.")),
	}
}

func pointerOpts(t *testing.T) compact.Options {
	o := baseOpts(t)
	o.Counter = nil
	o.Force = true
	o.TailRatio = -1 // the tail is the last message
	o.Archiver = &seqArchiver{}
	o.Pointers = storedPointers
	return o
}

// wantFirst are the pointers of the first compaction of pointerSession.
var wantFirst = []string{
	"- Bash `go test ./...` → tool_result_t1 (/ws/ns/tool_result_t1.txt, 1,234 chars, 3 lines)",
	"- Read `/repo/money/round.go` → tool_result_t2 (/ws/ns/tool_result_t2.txt, 1,234 chars, 3 lines)",
	"- Bash `git log --oneline -3` → tool_result_t3 (/ws/ns/tool_result_t3.txt, 1,234 chars, 3 lines)",
	"- Archive of 8 messages → compact_a1 (/ws/ns/compact_a1.txt, 8,000 bytes)",
}

// section returns the lines of a summary's pointer section, heading and
// intro left out, and checks that it is the summary's last.
func section(t *testing.T, summary string) []string {
	t.Helper()
	_, sec, ok := strings.Cut(summary, "\n\n## "+compact.PointersTitle+"\n")
	if !ok {
		t.Fatalf("summary has no pointer section:\n%s", summary)
	}
	lines := strings.Split(sec, "\n")[1:]
	for _, l := range lines {
		if !strings.HasPrefix(l, "- ") {
			t.Fatalf("pointer section is not last, or has a stray line %q:\n%s", l, summary)
		}
	}
	return lines
}

// The extractive summary of a middle with offloaded and pruned results
// names every stored result's artifact id and path, and the archive's.
func TestCompactPointers(t *testing.T) {
	res, err := compact.Compact(context.Background(), pointerSession(), pointerOpts(t))
	if err != nil || !res.Compacted {
		t.Fatalf("not compacted: %+v %v", res, err)
	}
	if got := section(t, res.Summary); !slices.Equal(got, wantFirst) {
		t.Errorf("pointer section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFirst, "\n"))
	}
	for _, w := range []string{"tool_result_t1", "/ws/ns/tool_result_t1.txt", "tool_result_t2", "/ws/ns/tool_result_t2.txt",
		"compact_a1", "/ws/ns/compact_a1.txt"} {
		if !strings.Contains(res.Summary, w) {
			t.Errorf("summary does not name %s", w)
		}
	}
	// The same messages give the same bytes.
	again, _ := compact.Extractive{}.Summarize(context.Background(), compact.Request{Messages: pointerSession()[:8], Archive: "compact_a1",
		Pointers: compact.ParsePointers(res.Summary)})
	if again != res.Summary {
		t.Errorf("Extractive with the parsed pointers differs:\n%s\nwant:\n%s", again, res.Summary)
	}
}

// A summary lists each file a result says the client saved output to,
// whatever the result's size and with no caller's pointers (as `agentctx
// compact` runs): Claude Code's and Qwen Code's preview of 2 KB, opencode's
// hint; a result that merely mentions a path gets no line (issue 47, item
// 6).
func TestCompactPointsToClientSavedFiles(t *testing.T) {
	const claude = "/home/u/.claude/projects/-repo/4f1c/tool-results/toolu_01.txt"
	const qwen = `C:\Users\Ada Lovelace\.qwen\tmp\ab12\tool-results\call_7.txt`
	const opencode = "/home/u/.local/share/opencode/tool-output/tool_cb7a1db8e001"
	msgs := []agentctx.Message{
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Build it and keep the LEDGER_SEED it prints.")),
		toolCall("t1", "Bash", map[string]string{"command": "make"}, ""),
		toolResult("t1", "<persisted-output>\nOutput too large (58.6KB). Full output saved to: "+claude+
			"\n\nPreview (first 2KB):\n"+strings.Repeat("cc -O2 -c ledger.c\n", 100)+"...\n</persisted-output>"),
		toolCall("t2", "run_shell_command", map[string]string{"command": "make test"}, ""),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock("t2", agentctx.BlockList(
			agentctx.TextBlock("<persisted-output>\nOutput too large (57 KB). Full output saved to: "+qwen+"\n\nPreview (up to 2000 chars):\nok\n</persisted-output>")), false))),
		toolCall("t3", "bash", map[string]string{"command": "make check"}, ""),
		toolResult("t3", "ok\n\n...2400 lines truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: "+opencode+
			"\nUse Grep to search the full content or Read with offset/limit to view specific sections."),
		toolCall("t4", "Read", map[string]string{"file_path": "/repo/NOTES"}, ""),
		toolResult("t4", "see /home/u/.claude/projects/-repo/4f1c/tool-results/toolu_09.txt for the old log"),
		agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("The build passed.")),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Go on.")),
	}
	o := pointerOpts(t)
	o.Pointers = nil
	res, err := compact.Compact(context.Background(), msgs, o)
	if err != nil || !res.Compacted {
		t.Fatalf("not compacted: %+v %v", res, err)
	}
	want := []string{
		"- Bash `make` → " + claude,
		"- run_shell_command `make test` → " + qwen,
		"- bash `make check` → " + opencode,
		"- Archive of 10 messages → compact_a1 (/ws/ns/compact_a1.txt, 10,000 bytes)",
	}
	if got := section(t, res.Summary); !slices.Equal(got, want) {
		t.Errorf("pointer section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A later compaction keeps them (they come back from the summary).
	if got := compact.ParsePointers(res.Summary); len(got) != 4 || got[1].Path != qwen {
		t.Errorf("ParsePointers = %+v", got)
	}
}

// A summarizer that leaves the pointers out gets them appended; one that
// keeps them gets nothing twice; one that changes them gets the canonical
// section back.
func TestCompactPointersAnySummarizer(t *testing.T) {
	const body = compact.SummaryTitle + "\n\n## Current state\n- the rounding mode changed in c2d41e0"
	copySection := func(_ int, prompt string) (string, error) {
		_, rest, _ := strings.Cut(prompt, "<stored_originals>\n")
		sec, _, _ := strings.Cut(rest, "\n</stored_originals>")
		return body + "\n\n" + sec, nil
	}
	tests := []struct {
		name   string
		answer func(int, string) (string, error)
		same   bool // the summary is the model's answer, unchanged
	}{
		{"drops them", func(int, string) (string, error) { return body, nil }, false},
		{"keeps them", copySection, true},
		{"changes them", func(n int, prompt string) (string, error) {
			s, _ := copySection(n, prompt)
			s = strings.Replace(s, "- Bash `go test ./...` → tool_result_t1 (/ws/ns/tool_result_t1.txt, 1,234 chars, 3 lines)", "- tool_result_t1: the test output", 1)
			return strings.Replace(s, "- Archive", "- The archive", 1), nil
		}, false},
		{"names them in its own words", func(int, string) (string, error) {
			return body + "\n- full output: tool_result_t1 (/ws/ns/tool_result_t1.txt), archive compact_a1", nil
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &recordingModel{answer: tc.answer}
			o := pointerOpts(t)
			o.Summarizer = &compact.ModelSummarizer{Model: m}
			res, err := compact.Compact(context.Background(), pointerSession(), o)
			if err != nil || !res.Compacted {
				t.Fatalf("not compacted: %+v %v", res, err)
			}
			if !strings.Contains(m.prompts[0], compact.PointersPrompt) || !strings.Contains(m.prompts[0], strings.Join(wantFirst, "\n")) {
				t.Errorf("the prompt does not ask to keep the pointers:\n%s", m.prompts[0])
			}
			if got := section(t, res.Summary); !slices.Equal(got, wantFirst) {
				t.Errorf("pointer section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFirst, "\n"))
			}
			if n := strings.Count(res.Summary, "## "+compact.PointersTitle); n != 1 {
				t.Errorf("%d pointer sections, want 1", n)
			}
			if answer, _ := tc.answer(1, m.prompts[0]); tc.same && res.Summary != answer {
				t.Errorf("a summary that kept its pointers was changed:\n%s\nwant:\n%s", res.Summary, answer)
			}
		})
	}
	// Any Summarizer, not only the model's: Compact adds the section.
	o := pointerOpts(t)
	o.Summarizer = compact.SummarizerFunc(func(context.Context, compact.Request) (string, error) { return body, nil })
	res, err := compact.Compact(context.Background(), pointerSession(), o)
	if err != nil || !res.Compacted {
		t.Fatalf("not compacted: %+v %v", res, err)
	}
	if got := section(t, res.Summary); !slices.Equal(got, wantFirst) {
		t.Errorf("pointer section after a SummarizerFunc:\n%s", strings.Join(got, "\n"))
	}
}

// A second compaction whose middle holds the first summary keeps the
// first's pointers, then adds its own, whatever the summarizer.
func TestCompactAgainKeepsPointers(t *testing.T) {
	drop := compact.SummarizerFunc(func(_ context.Context, req compact.Request) (string, error) {
		return compact.SummaryTitle + "\n\n## Current state\n- " + fmt.Sprint(len(req.Messages)) + " messages", nil
	})
	for _, s := range []compact.Summarizer{nil, drop} {
		name := "extractive"
		if s != nil {
			name = "summarizer without pointers"
		}
		t.Run(name, func(t *testing.T) {
			o := pointerOpts(t)
			o.Summarizer = s
			res1, err := compact.Compact(context.Background(), pointerSession(), o)
			if err != nil || !res1.Compacted {
				t.Fatalf("first compaction: %+v %v", res1, err)
			}
			hist := slices.Clone(res1.Messages)
			hist = append(hist,
				toolCall("t4", "Edit", map[string]string{"file_path": "/repo/money/round.go", "old_string": "RoundHalfEven", "new_string": "RoundHalfUp"}, ""),
				toolResult("t4", "The file /repo/money/round.go has been updated."),
				toolCall("t5", "Bash", map[string]string{"command": "go test ./..."}, ""),
				toolResult("t5", "ok  \tledger/money\t0.01s"),
				agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Commit it.")))
			res2, err := compact.Compact(context.Background(), hist, o)
			if err != nil || !res2.Compacted || res2.Head != 0 {
				t.Fatalf("second compaction: %+v %v", res2, err)
			}
			want := append(slices.Clone(wantFirst),
				"- Edit `/repo/money/round.go` → tool_result_t4 (/ws/ns/tool_result_t4.txt, 1,234 chars, 3 lines)",
				"- Bash `go test ./...` → tool_result_t5 (/ws/ns/tool_result_t5.txt, 1,234 chars, 3 lines)",
				"- Archive of 6 messages → compact_a2 (/ws/ns/compact_a2.txt, 6,000 bytes)")
			if got := section(t, res2.Summary); !slices.Equal(got, want) {
				t.Errorf("second pointer section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The pointers are not mistaken for the story: no store path
			// among the file operations or identifiers.
			if story := compact.StripPointers(res2.Summary); strings.Contains(story, "/ws/ns/") {
				t.Errorf("the story quotes the pointers:\n%s", story)
			}
		})
	}
}

// MaxPointers bounds the section: the oldest results go first, the
// archive stays; a negative MaxPointers writes none.
func TestCompactMaxPointers(t *testing.T) {
	o := pointerOpts(t)
	o.MaxPointers = 2
	res, err := compact.Compact(context.Background(), pointerSession(), o)
	if err != nil || !res.Compacted {
		t.Fatalf("not compacted: %+v %v", res, err)
	}
	if got, want := section(t, res.Summary), []string{wantFirst[2], wantFirst[3]}; !slices.Equal(got, want) {
		t.Errorf("pointer section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	o = pointerOpts(t)
	o.MaxPointers = -1
	res, err = compact.Compact(context.Background(), pointerSession(), o)
	if err != nil || strings.Contains(res.Summary, compact.PointersTitle) {
		t.Errorf("MaxPointers -1 wrote pointers: %v\n%s", err, res.Summary)
	}
}

// ParsePointers reads back what RenderPointers writes, paths with odd
// characters and pointers without an artifact id or a size included.
func TestPointersRoundTrip(t *testing.T) {
	ps := []compact.Pointer{
		{Kind: compact.PointerResult, ArtifactID: "tool_result_a", Path: "/x/a, b (c)/tool_result_a.txt", ToolName: "Bash", Input: "echo `x` → y", Chars: 1_234_567, Lines: 12},
		{Kind: compact.PointerResult, ArtifactID: "tool_result_b", ToolName: "mcp tool"},
		{Kind: compact.PointerResult, ArtifactID: "tool_result_c", Chars: 5, Lines: 1},
		{Kind: compact.PointerArchive, Path: "/a/.offload/s/compact-20261122T071400Z-1.json", Bytes: 99, Messages: 1},
		{Kind: compact.PointerArchive, ArtifactID: "compact_0123"},
	}
	text := compact.SummaryTitle + "\n\n## Current state\n- x\n\n" + compact.RenderPointers(ps)
	got := compact.ParsePointers(text)
	want := slices.Clone(ps)
	want[0].Input = "echo 'x' -> y"
	want[1].ToolName = "mcp_tool"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePointers(RenderPointers(ps)) =\n%+v\nwant\n%+v\ntext:\n%s", got, want, text)
	}
	if again := compact.WithPointers(text, got); again != text {
		t.Errorf("WithPointers of a summary that has them changed it:\n%s", again)
	}
	if compact.StripPointers(text) != compact.SummaryTitle+"\n\n## Current state\n- x" {
		t.Errorf("StripPointers = %q", compact.StripPointers(text))
	}
}
