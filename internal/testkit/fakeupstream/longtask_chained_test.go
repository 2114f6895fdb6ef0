package fakeupstream_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/tokens"
)

// chainedTask returns a chained LongTask of steps steps with its files
// written in a temporary directory.
func chainedTask(t *testing.T, steps int, opts fakeupstream.LongTaskOptions) *fakeupstream.LongTask {
	t.Helper()
	opts.Steps, opts.Chained = steps, true
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	m := fakeupstream.NewLongTask(opts)
	if err := m.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	return m
}

// printed returns the output of step i as the client's shell prints it.
func printed(t *testing.T, dir string, m *fakeupstream.LongTask, i int) string {
	t.Helper()
	return shell(t, dir, m.Step(i).Command)
}

var (
	nextLine = regexp.MustCompile(`chain step ([0-9]{3}) NEXT=([0-9a-f]{16})`)
	keepLine = regexp.MustCompile(`KEEP([123])=([0-9a-f]{16})`)
)

// valueOf returns the value a step's output prints on re's line.
func valueOf(t *testing.T, out string, re *regexp.Regexp) string {
	t.Helper()
	g := re.FindStringSubmatch(out)
	if g == nil {
		t.Fatalf("no %s in the output:\n%.300s", re, out)
	}
	return g[len(g)-1]
}

// turn is an assistant turn: its text with a Bash call, and the call's
// result.
type turn struct{ text, result string }

// anthropicCall returns the call of an Anthropic request whose history is
// items: strings are user texts, turns assistant turns with their results.
func anthropicCall(t *testing.T, items ...any) *fakeupstream.Call {
	t.Helper()
	var msgs []any
	for n, it := range items {
		switch v := it.(type) {
		case string:
			msgs = append(msgs, map[string]any{"role": "user", "content": v})
		case turn:
			id := "toolu_" + string(rune('a'+n))
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": v.text},
					map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "x"}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": v.result}}})
		}
	}
	body := map[string]any{"model": "claude-sonnet-4-5", "messages": msgs}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeupstream.Call{API: fakeupstream.APIAnthropic, Header: http.Header{}, Body: body, Raw: raw, ToolNames: []string{"Bash", "Read"}}
}

func reference(path string) string {
	return "<knowledge_list>\n<knowledge id=\"tool_result_x\" chars=\"55000\">\n<head>\nline 1\n</head>\n</knowledge>\n</knowledge_list>\n<file>" + path + "</file> (the whole content: read it with your file tool)"
}

// The chained task end to end with the minimal client: every step's file
// is named with the value the previous output printed (the client runs
// the commands, and a wrong name fails it), and the final answer quotes
// the three KEEP values; nothing was removed, so nothing is read back.
func TestLongTaskChained(t *testing.T) {
	const steps = 14
	dir := t.TempDir()
	m := chainedTask(t, steps, fakeupstream.LongTaskOptions{Dir: dir, SmallOutputs: true})
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: m.Script}))
	defer srv.Close()
	cl := &longTaskClient{t: t, url: srv.URL, dir: dir, msgs: []any{map[string]any{"role": "user", "content": "Run the maintenance task."}}}
	var final string
	for range 2 * steps {
		text, called := cl.turn()
		if !called {
			final = text
			break
		}
	}
	if len(cl.outputs) != steps {
		t.Fatalf("%d steps ran, want %d", len(cl.outputs), steps)
	}
	for i, out := range cl.outputs {
		if i+1 < steps && nextLine.FindString(out) == "" {
			t.Errorf("step %d's output prints no NEXT value", i+1)
		}
		if i > 0 && !strings.Contains(m.Step(i+1).Path, valueOf(t, cl.outputs[i-1], nextLine)) {
			t.Errorf("step %d's file %s is not named with the value step %d printed", i+1, m.Step(i+1).Path, i)
		}
		if n := len(out); n < 500 || n > 5200 {
			t.Errorf("step %d: %d characters of output, want 500 to 5,000 (small outputs)", i+1, n)
		}
	}
	keeps := fakeupstream.KeepSteps(steps)
	for k, s := range keeps {
		if v := valueOf(t, cl.outputs[s-1], keepLine); !strings.Contains(final, v) {
			t.Errorf("the final answer %q does not quote KEEP%d=%s of step %d", final, k+1, v, s)
		}
	}
	if final != m.CorrectAnswer() || !strings.HasPrefix(final, fakeupstream.LongTaskAnswer(steps)+" keep=") {
		t.Errorf("final answer %q, want %q", final, m.CorrectAnswer())
	}
	if st := m.Stats(); st.ReadBacks != 0 || st.ChainMisses != 0 || st.Steps != steps {
		t.Errorf("stats %+v", st)
	}
}

// A value the request no longer holds is read back by the pointer the
// step's result holds; a request with neither value nor pointer runs the
// step without it (and its file is not found).
func TestLongTaskChainedReadsBack(t *testing.T) {
	dir := t.TempDir()
	m := chainedTask(t, 30, fakeupstream.LongTaskOptions{Dir: dir})
	out1 := printed(t, dir, m, 1)
	const path = "/ws/.agentctx/artifacts/tool_result_x.txt"
	prompt := "Run the long maintenance task."
	older := turn{"earlier work", reference("/ws/.agentctx/artifacts/older.txt")}

	// The result of step 1 was replaced by a reference: the model reads
	// it back by its path, with Read, though a pointer of an earlier
	// result comes later in the request.
	c := anthropicCall(t, prompt, turn{fakeupstream.Marker(1) + ": next", reference(path)}, older)
	r := m.Script(c)
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "Read" || r.ToolCalls[0].Input["file_path"] != path {
		t.Fatalf("want a read-back of %s, got %+v", path, r)
	}
	if strings.Contains(r.Text, "lt-step-") {
		t.Errorf("the read-back turn's text %q carries a step marker", r.Text)
	}
	// With the content back, the next step uses the value.
	c = anthropicCall(t, prompt, turn{fakeupstream.Marker(1) + ": next", reference(path)}, turn{r.Text, out1})
	r = m.Script(c)
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["command"] != m.Step(2).Command {
		t.Fatalf("want step 2 (%s), got %+v", m.Step(2).Command, r)
	}
	// The same pointer is not read twice for a value.
	c = anthropicCall(t, prompt, turn{fakeupstream.Marker(1) + ": next", reference(path)})
	r = m.Script(c)
	if len(r.ToolCalls) != 1 || !strings.Contains(r.ToolCalls[0].Input["command"].(string), "missing") {
		t.Fatalf("the pointer was read already: want step 2 without the value, got %+v", r)
	}
	// Nothing to read: step 2 without the value.
	c = anthropicCall(t, prompt, turn{fakeupstream.Marker(1) + ": next", "the result was cleared"})
	if r = m.Script(c); len(r.ToolCalls) != 1 || !strings.Contains(r.ToolCalls[0].Input["command"].(string), "grep -n Handle src/pkg002/handlers-missing.go") {
		t.Fatalf("want step 2 without the value, got %+v", r)
	}
	if st := m.Stats(); st.ReadBacks != 1 || st.ChainMisses != 2 || st.Steps != 3 {
		t.Errorf("stats %+v, want 1 read-back, 2 chain misses, 3 steps", st)
	}

	// Codex reads back with its shell tool.
	mc := chainedTask(t, 30, fakeupstream.LongTaskOptions{})
	raw := `{"input":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"output_text","text":"lt-step-001: next"}]},` +
		`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":` + jsonString(reference(path)) + `}]}`
	var body map[string]any
	json.Unmarshal([]byte(raw), &body)
	r = mc.Script(&fakeupstream.Call{API: fakeupstream.APIResponses, Header: http.Header{}, Body: body, Raw: []byte(raw), ToolNames: []string{"exec_command"}})
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "exec_command" || r.ToolCalls[0].Input["cmd"] != "cat "+path {
		t.Fatalf("codex: want exec_command cat %s, got %+v", path, r)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// The final answer quotes the three KEEP values; one that is gone is
// read back by the pointer of the result of the step that printed it,
// not by the newest pointer of the request.
func TestLongTaskChainedFinal(t *testing.T) {
	const steps = 12
	dir := t.TempDir()
	m := chainedTask(t, steps, fakeupstream.LongTaskOptions{Dir: dir})
	keeps := fakeupstream.KeepSteps(steps)
	if keeps != [3]int{2, 5, 9} {
		t.Fatalf("KeepSteps(%d) = %v", steps, keeps)
	}
	var items []any
	items = append(items, "Run the long maintenance task.")
	for i := 1; i <= steps; i++ {
		out := printed(t, dir, m, i)
		switch i {
		case keeps[1]:
			out = reference("/ws/keep2.txt")
		case 11:
			out = reference("/ws/newer.txt")
		}
		items = append(items, turn{fakeupstream.Marker(i) + ": next", out})
	}
	r := m.Script(anthropicCall(t, items...))
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["file_path"] != "/ws/keep2.txt" {
		t.Fatalf("want a read-back of step %d's result, got %+v", keeps[1], r)
	}
	items = append(items, turn{r.Text, printed(t, dir, m, keeps[1])})
	r = m.Script(anthropicCall(t, items...))
	if len(r.ToolCalls) != 0 || r.Text != m.CorrectAnswer() {
		t.Fatalf("final answer %+v, want %q", r, m.CorrectAnswer())
	}
	for k, s := range keeps {
		if v := valueOf(t, printed(t, dir, m, s), keepLine); !strings.Contains(r.Text, "keep=") || !strings.Contains(r.Text, v) {
			t.Errorf("the answer lacks KEEP%d=%s", k+1, v)
		}
	}
	// Without its pointer, the model tries the others (here step 11's),
	// then reports the value missing: the answer is wrong.
	m2 := chainedTask(t, steps, fakeupstream.LongTaskOptions{Dir: dir})
	items[keeps[1]] = turn{fakeupstream.Marker(keeps[1]) + ": next", "cleared"}
	items = items[:len(items)-1]
	if r = m2.Script(anthropicCall(t, items...)); len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["file_path"] != "/ws/newer.txt" {
		t.Fatalf("want a read-back of the other pointer, got %+v", r)
	}
	items = append(items, turn{r.Text, printed(t, dir, m2, 11)})
	if r = m2.Script(anthropicCall(t, items...)); r.Text == m2.CorrectAnswer() || !strings.Contains(r.Text, "missing") {
		t.Errorf("answer %q without KEEP2 anywhere", r.Text)
	}
	if st := m2.Stats(); st.ReadBacks != 1 || st.Answer != r.Text {
		t.Errorf("stats %+v", st)
	}
}

// A summary is about SummaryTokens long and carries the KEEP values and
// the NEXT value of the latest step it saw; after a compaction to that
// summary alone the model goes on without reading anything back.
func TestLongTaskChainedSummary(t *testing.T) {
	const steps = 30
	dir := t.TempDir()
	m := chainedTask(t, steps, fakeupstream.LongTaskOptions{Dir: dir, SummaryTitle: "# Summary"})
	items := []any{"Run the long maintenance task."}
	for i := 1; i <= 10; i++ {
		items = append(items, turn{fakeupstream.Marker(i) + ": next", printed(t, dir, m, i)})
	}
	items = append(items, "Your task is to create a detailed summary of the conversation so far.")
	sum := m.Script(anthropicCall(t, items...)).Text
	if n := tokens.O200kBase().Count(sum); n < 2400 || n > 2700 {
		t.Errorf("the summary is %d tokens, want about %d", n, fakeupstream.DefaultSummaryTokens)
	}
	for _, s := range fakeupstream.KeepSteps(steps) {
		if v := valueOf(t, printed(t, dir, m, s), keepLine); !strings.Contains(sum, v) {
			t.Errorf("the summary lacks the KEEP value of step %d (%s)", s, v)
		}
	}
	next10 := valueOf(t, printed(t, dir, m, 10), nextLine)
	if !strings.Contains(sum, "chain step 010 NEXT="+next10) || strings.Contains(sum, valueOf(t, printed(t, dir, m, 9), nextLine)) {
		t.Errorf("the summary should carry step 10's NEXT value only:\n%.1500s", sum)
	}
	r := m.Script(anthropicCall(t, "This session continues from an earlier one.\n"+sum))
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["file_path"] != filepath.Join(dir, m.Step(11).Path) {
		t.Fatalf("after the compaction: want step 11 (%s), got %+v", m.Step(11).Path, r)
	}
	// The proxy's summary request too; a short summary on request.
	short := chainedTask(t, steps, fakeupstream.LongTaskOptions{Dir: dir, SummaryTokens: -1})
	c := anthropicCall(t, items[:len(items)-1]...)
	c.Header.Set(fakeupstream.DefaultSummaryHeader, "1")
	sum = short.Script(c).Text
	if n := tokens.O200kBase().Count(sum); n > 300 || !strings.Contains(sum, next10) {
		t.Errorf("short summary of %d tokens:\n%s", n, sum)
	}
	if st := m.Stats(); st.ClientSummaries != 1 || st.ReadBacks != 0 {
		t.Errorf("stats %+v", st)
	}
}

// The regimes' pauses: the slow build (step 5 of 12) takes SlowBuild of
// session time, 6 minutes by default; other steps keep theirs.
func TestLongTaskSlowBuild(t *testing.T) {
	for _, tc := range []struct {
		slow time.Duration
		want string
	}{
		{0, "sleep 6.000; "},
		{time.Minute, "sleep 1.000; "},
		{6 * time.Minute, "sleep 6.000; "},
	} {
		m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 120, ClockSpeed: 60, SlowBuild: tc.slow})
		c := &fakeupstream.Call{API: fakeupstream.APIResponses, Header: http.Header{}, ToolNames: []string{"exec_command"},
			Body: map[string]any{}, Raw: []byte(`{"input":[{"role":"assistant","content":"lt-step-004: next"}]}`)}
		r := m.Script(c)
		if cmd, _ := r.ToolCalls[0].Input["cmd"].(string); cmd != tc.want+"cat logs/build-005.log" {
			t.Errorf("SlowBuild %v: step 5's command is %q", tc.slow, cmd)
		}
		if st := m.Step(5); st.Duration != max(tc.slow, 0) && !(tc.slow == 0 && st.Duration == fakeupstream.SlowBuildTime) {
			t.Errorf("SlowBuild %v: step 5 takes %v", tc.slow, st.Duration)
		}
		if st := m.Step(1); st.Duration != fakeupstream.TestTime {
			t.Errorf("SlowBuild %v: step 1 (a test run) takes %v", tc.slow, st.Duration)
		}
	}
}

// shell runs a shell command in dir and returns its output.
func shell(t *testing.T, dir, command string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return string(out)
}
