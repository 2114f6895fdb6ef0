package fakeupstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// longTaskClient is a minimal Claude Code-like client of the Messages API:
// it offers Bash and Read, runs the calls in dir, and keeps the history.
type longTaskClient struct {
	t       *testing.T
	url     string
	dir     string
	msgs    []any
	outputs []string // each step's tool output
}

func (cl *longTaskClient) send(header http.Header) map[string]any {
	cl.t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 32000, "messages": cl.msgs,
		"tools": []any{map[string]any{"name": "Bash", "input_schema": map[string]any{}}, map[string]any{"name": "Read", "input_schema": map[string]any{}}}})
	req, _ := http.NewRequest(http.MethodPost, cl.url+"/v1/messages", bytes.NewReader(body))
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cl.t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil || resp.StatusCode != http.StatusOK {
		cl.t.Fatalf("status %d, %v: %v", resp.StatusCode, err, msg)
	}
	return msg
}

// turn sends the history and runs the tool call of the answer; it returns
// the answer's text and whether it called a tool.
func (cl *longTaskClient) turn() (string, bool) {
	cl.t.Helper()
	msg := cl.send(http.Header{})
	content := msg["content"].([]any)
	cl.msgs = append(cl.msgs, map[string]any{"role": "assistant", "content": content})
	var text string
	for _, bv := range content {
		b := bv.(map[string]any)
		switch b["type"] {
		case "text":
			text = b["text"].(string)
		case "tool_use":
			in := b["input"].(map[string]any)
			var out []byte
			var err error
			if b["name"] == "Read" {
				out, err = exec.Command("cat", in["file_path"].(string)).Output()
			} else {
				cmd := exec.Command("bash", "-c", in["command"].(string))
				cmd.Dir = cl.dir
				out, err = cmd.Output()
			}
			if err != nil {
				cl.t.Fatalf("%v: %v", in, err)
			}
			cl.outputs = append(cl.outputs, string(out))
			cl.msgs = append(cl.msgs, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": b["id"], "content": string(out)}}})
			return text, true
		}
	}
	return text, false
}

func TestLongTask(t *testing.T) {
	const steps = 14
	dir := t.TempDir()
	if err := fakeupstream.WriteLongTaskFiles(dir, steps); err != nil {
		t.Fatal(err)
	}
	m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: steps, Dir: dir, SummaryTitle: "# Summary"})
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: m.Script}))
	defer srv.Close()
	cl := &longTaskClient{t: t, url: srv.URL, dir: dir,
		msgs: []any{map[string]any{"role": "user", "content": "Run the maintenance task."}}}

	var final string
	for turn := 0; turn < 2*steps; turn++ {
		text, called := cl.turn()
		if !called {
			final = text
			break
		}
		if want := fakeupstream.Marker(len(cl.outputs)); !strings.HasPrefix(text, want+":") {
			t.Fatalf("step %d's text starts %.40q, want the marker %s", len(cl.outputs), text, want)
		}
		if n := len(text); n < 800 || n > 5000 {
			t.Errorf("step %d: %d characters of text, want some 200 to 800 tokens", len(cl.outputs), n)
		}
		switch len(cl.outputs) {
		case 5:
			// The client compacts: its summary request, then a history
			// of the summary alone.
			cl.msgs = append(cl.msgs, map[string]any{"role": "user", "content": "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests."})
			sum := cl.send(http.Header{})["content"].([]any)[0].(map[string]any)["text"].(string)
			if !strings.Contains(sum, fakeupstream.Marker(5)) {
				t.Fatalf("the client's summary does not name the last step %s:\n%s", fakeupstream.Marker(5), sum)
			}
			cl.msgs = []any{map[string]any{"role": "user", "content": "This session continues from an earlier one.\n" + sum}}
		case 9:
			// The proxy's summary request.
			sum := cl.send(http.Header{fakeupstream.DefaultSummaryHeader: {"1"}})["content"].([]any)[0].(map[string]any)["text"].(string)
			if !strings.HasPrefix(sum, "# Summary") || !strings.Contains(sum, fakeupstream.Marker(9)) {
				t.Fatalf("the proxy's summary lacks the title or the last step %s:\n%s", fakeupstream.Marker(9), sum)
			}
		}
	}
	if final != fakeupstream.LongTaskAnswer(steps) {
		t.Errorf("final answer %q, want %q", final, fakeupstream.LongTaskAnswer(steps))
	}
	if len(cl.outputs) != steps {
		t.Fatalf("%d steps ran, want %d", len(cl.outputs), steps)
	}
	large := 0
	for i, out := range cl.outputs {
		if n := len(out); n < 2000 || n > 60000 {
			t.Errorf("step %d (%s): %d characters of output, want 2,000 to 60,000", i+1, fakeupstream.LongTaskStep(i+1, steps).Kind, n)
		}
		if st := fakeupstream.LongTaskStep(i+1, steps); st.Kind != fakeupstream.KindRead && len(out) > 28000 {
			t.Errorf("step %d: a shell output of %d characters, over Claude Code's cut of Bash output", i+1, len(out))
		}
		if len(out) >= 20000 {
			large++
		}
	}
	if large < 2 || large > steps/3 {
		t.Errorf("%d outputs of 20,000 characters or more in %d steps, want some but not most", large, steps)
	}
	st := m.Stats()
	if st.Steps != steps || st.ClientSummaries != 1 || st.ProxySummaries != 1 || st.Answer != final {
		t.Errorf("stats %+v", st)
	}
}

func TestLongTaskIgnoresRequestsWithoutTools(t *testing.T) {
	m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{})
	r := m.Script(&fakeupstream.Call{Header: http.Header{}, Body: map[string]any{}, Raw: []byte(`{"messages":[]}`)})
	if r.Text != "ok" || len(r.ToolCalls) != 0 {
		t.Errorf("reply %+v, want ok", r)
	}
}

func TestLongTaskCodex(t *testing.T) {
	m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 120, ClockSpeed: 60})
	c := &fakeupstream.Call{API: fakeupstream.APIResponses, Header: http.Header{}, ToolNames: []string{"exec_command", "apply_patch"},
		Body: map[string]any{}, Raw: []byte(`{"input":[{"role":"assistant","content":"lt-step-004: next"}]}`)}
	r := m.Script(c)
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "exec_command" {
		t.Fatalf("reply %+v", r)
	}
	// Step 5 is the slow build.
	if cmd := r.ToolCalls[0].Input["cmd"]; cmd != "sleep 6.000; cat logs/build-005.log" {
		t.Errorf("step 5's command is %q", cmd)
	}
}

// With NoLatency the model answers at once (a replay on a recorded clock),
// its commands written as on the clock of ClockSpeed: at ×1 the slow
// build's answer would take seconds of latency, and sleeps 6 minutes.
func TestLongTaskNoLatency(t *testing.T) {
	m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 120, ClockSpeed: 1, NoLatency: true})
	c := &fakeupstream.Call{API: fakeupstream.APIResponses, Header: http.Header{}, ToolNames: []string{"exec_command", "apply_patch"},
		Body: map[string]any{}, Raw: []byte(`{"input":[{"role":"assistant","content":"lt-step-004: next"}]}`)}
	start := time.Now()
	r := m.Script(c)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the answer took %v", d)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Input["cmd"] != "sleep 360.000; cat logs/build-005.log" {
		t.Errorf("reply %+v, want the slow build's command with its sleep", r)
	}
}

// With LongTaskOptions.Thinking the model thinks before each step it
// answers, on Anthropic requests with thinking on only.
func TestLongTaskThinking(t *testing.T) {
	call := func(thinking any) *fakeupstream.Call {
		body := map[string]any{"model": "claude-sonnet-4-5"}
		if thinking != nil {
			body["thinking"] = thinking
		}
		return &fakeupstream.Call{API: fakeupstream.APIAnthropic, Body: body, ToolNames: []string{"Bash", "Read"}}
	}
	for _, tc := range []struct {
		name     string
		opt      bool
		thinking any
		want     bool
	}{
		{"on, enabled", true, map[string]any{"type": "enabled", "budget_tokens": 31999}, true},
		{"on, adaptive", true, map[string]any{"type": "adaptive"}, true},
		{"on, disabled", true, map[string]any{"type": "disabled"}, false},
		{"on, not asked", true, nil, false},
		{"off", false, map[string]any{"type": "enabled", "budget_tokens": 31999}, false},
	} {
		m := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 3, Thinking: tc.opt})
		r := m.Script(call(tc.thinking))
		if len(r.ToolCalls) != 1 {
			t.Fatalf("%s: want a step, got %+v", tc.name, r)
		}
		if got := r.Thinking != ""; got != tc.want {
			t.Errorf("%s: thinking %q, want thinking %v", tc.name, r.Thinking, tc.want)
		}
	}
}

// The long task drives opencode with its own tools: bash (command, a
// timeout in milliseconds) and read (filePath, absolute); with Chained,
// its read-backs are reads of the path.
func TestLongTaskOpencode(t *testing.T) {
	call := func(raw string) *fakeupstream.Call {
		var body map[string]any
		if err := json.Unmarshal([]byte(raw), &body); err != nil {
			t.Fatal(err)
		}
		return &fakeupstream.Call{API: fakeupstream.APIAnthropic, Header: http.Header{}, Body: body, Raw: []byte(raw),
			ToolNames: []string{"bash", "edit", "glob", "grep", "read", "task", "write"}}
	}
	after := func(step int, result string) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":"run the task"},{"role":"assistant","content":"%s: next"},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":%q}]}]}`, fakeupstream.Marker(step), result)
	}
	plain := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 12, Dir: "/work"})
	chained := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: 12, Dir: "/work", Chained: true, PathRoots: []string{"/ws"}})
	for _, tc := range []struct {
		name            string
		m               *fakeupstream.LongTask
		raw             string
		tool, key, want string
	}{
		{"a shell step", plain, `{"messages":[{"role":"user","content":"run the task"}]}`, "bash", "command", "cat logs/test-001.log"},
		{"a file read", plain, after(2, "ok"), "read", "filePath", "/work/src/pkg003/store.go"},
		{"a read-back", chained, after(4, "offloaded to /ws/default/tool_result_t.txt"), "read", "filePath", "/ws/default/tool_result_t.txt"},
	} {
		r := tc.m.Script(call(tc.raw))
		if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != tc.tool || r.ToolCalls[0].Input[tc.key] != tc.want {
			t.Errorf("%s: reply calls %+v, want %s with %s %q", tc.name, r.ToolCalls, tc.tool, tc.key, tc.want)
		}
		if tc.tool == "bash" && r.ToolCalls[0].Input["timeout"] != 600000 {
			t.Errorf("%s: bash's timeout is %v, want 600000 (ms)", tc.name, r.ToolCalls[0].Input["timeout"])
		}
	}
}
