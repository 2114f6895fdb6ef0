package gemcontents_test

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/gemcontents"
)

// A Gemini CLI conversation, as it sends it: the user's prompt; a model
// turn with a thought, a text and a signed function call; its response
// (an id on the response only); a model turn of two parallel calls
// without ids; their responses, by name; the final answer.
var conversation = []string{
	`{"role":"user","parts":[{"text":"Fix the test."}]}`,
	`{"role":"model","parts":[{"text":"I should look.","thought":true},{"text":"Let me look."},{"functionCall":{"name":"run_shell_command","args":{"command": "ls"}},"thoughtSignature":"c2lnLTE="}]}`,
	`{"role":"user","parts":[{"functionResponse":{"id":"cli-1","name":"run_shell_command","response":{"output":"a.go\nb.go"}}}]}`,
	`{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"a.go"}},"thoughtSignature":"c2lnLTI="},{"functionCall":{"name":"read_file","args":{"path":"b.go"}}}]}`,
	`{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"package a"}}},{"functionResponse":{"name":"read_file","response":{"output":"package b"}}},{"text":"Also check c.go."}]}`,
	`{"role":"model","parts":[{"text":"Done: the test passes."}]}`,
}

func items(t *testing.T) (string, [][]byte) {
	t.Helper()
	array := "[" + strings.Join(conversation, ",") + "]"
	els, err := rawjson.Elements([]byte(array))
	if err != nil {
		t.Fatal(err)
	}
	return array, els
}

func TestMessages(t *testing.T) {
	_, contents := items(t)
	msgs, refs, err := gemcontents.Messages(contents)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		role, text, callID string
		calls              []string // id name args
		content            int
		parts              []int
	}
	wants := []want{
		{role: "user", text: "Fix the test.", content: 0, parts: []int{0}},
		{role: "assistant", text: "Let me look.", calls: []string{`gemini-call-1-2 run_shell_command {"command":"ls"}`}, content: 1, parts: []int{0, 1, 2}},
		{role: "tool", text: "a.go\nb.go", callID: "gemini-call-1-2", content: 2, parts: []int{0}},
		{role: "assistant", calls: []string{`gemini-call-3-0 read_file {"path":"a.go"}`, `gemini-call-3-1 read_file {"path":"b.go"}`}, content: 3, parts: []int{0, 1}},
		{role: "tool", text: "package a", callID: "gemini-call-3-0", content: 4, parts: []int{0}},
		{role: "tool", text: "package b", callID: "gemini-call-3-1", content: 4, parts: []int{1}},
		{role: "user", text: "Also check c.go.", content: 4, parts: []int{2}},
		{role: "assistant", text: "Done: the test passes.", content: 5, parts: []int{0}},
	}
	if len(msgs) != len(wants) || len(refs) != len(msgs) {
		t.Fatalf("%d messages, %d refs; want %d", len(msgs), len(refs), len(wants))
	}
	for i, w := range wants {
		m := msgs[i]
		var calls []string
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.ID+" "+tc.Function.Name+" "+tc.Function.Arguments)
		}
		if m.Role != w.role || text(&m) != w.text || m.ToolCallID != w.callID || strings.Join(calls, ";") != strings.Join(w.calls, ";") ||
			refs[i].Content != w.content || !equal(refs[i].Parts, w.parts) {
			t.Errorf("message %d: %s %q (answers %q, calls %q) from %+v; want %+v", i, m.Role, text(&m), m.ToolCallID, calls, refs[i], w)
		}
	}
	// An id on the call and the response: kept.
	withIDs := [][]byte{[]byte(`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f"}}]}`),
		[]byte(`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"error":"boom"}}}]}`)}
	msgs, _, err = gemcontents.Messages(withIDs)
	if err != nil || msgs[0].ToolCalls[0].ID != "c1" || msgs[0].ToolCalls[0].Function.Arguments != "{}" || msgs[1].ToolCallID != "c1" || text(&msgs[1]) != "boom" {
		t.Errorf("ids: %+v, %v", msgs, err)
	}
	if _, _, err := gemcontents.Messages([][]byte{[]byte(`[]`)}); err == nil {
		t.Error("a content that is not an object was mapped")
	}
}

// Sent as they came, the messages write the contents as they came, each
// content kept (read in place).
func TestSpliceUnchanged(t *testing.T) {
	array, contents := items(t)
	msgs, refs, _ := gemcontents.Messages(contents)
	match, err := gemcontents.Match(msgs, msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := gemcontents.AppendSplice(nil, contents, msgs, refs, msgs, match); string(got) != array {
		t.Errorf("unchanged:\n got %s\nwant %s", got, array)
	}
	body := []byte(array)
	contents, _ = rawjson.Elements(body)
	parts := gemcontents.SpliceParts(body, contents, msgs, refs, msgs, match)
	if len(parts) != 3 { // "[", the contents in place, "]"
		t.Errorf("%d parts, want the contents read in place as one", len(parts))
	}
}

// A tool result the pipeline replaced (an offloaded output) is its part
// with only the output replaced: its content's other parts, and every
// other content, as they came.
func TestSpliceChangedResult(t *testing.T) {
	array, contents := items(t)
	msgs, refs, _ := gemcontents.Messages(contents)
	out := append([]agentctx.Message(nil), msgs...)
	out[4] = agentctx.NewMessage(agentctx.RoleTool, agentctx.Text("[stored: ref-1]"))
	out[4].ToolCallID = "gemini-call-3-0"
	match, _ := gemcontents.Match(msgs, out, nil)
	got := string(gemcontents.AppendSplice(nil, contents, msgs, refs, out, match))
	want := strings.Replace(array, `"output":"package a"`, `"output":"[stored: ref-1]"`, 1)
	if got != want {
		t.Errorf("changed result:\n got %s\nwant %s", got, want)
	}
	// A response without an output member gets one.
	c := [][]byte{[]byte(`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f"}}]}`),
		[]byte(`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"lines":[1,2]}}}]}`)}
	in, r, _ := gemcontents.Messages(c)
	o := append([]agentctx.Message(nil), in...)
	o[1] = agentctx.NewMessage(agentctx.RoleTool, agentctx.Text("ref"))
	o[1].ToolCallID = "c1"
	m, _ := gemcontents.Match(in, o, nil)
	if got := string(gemcontents.AppendSplice(nil, c, in, r, o, m)); !strings.Contains(got, `"response":{"output":"ref"}`) {
		t.Errorf("no output member: %s", got)
	}
}

// A compaction: the messages before the kept tail dropped, a summary in
// their place; a dropped tool result of a content of several is that
// content with its other parts; an assistant message the pipeline changed
// is its model content as it came (never rewritten: the signatures stay on
// their parts).
func TestSpliceCompacted(t *testing.T) {
	_, contents := items(t)
	msgs, refs, _ := gemcontents.Messages(contents)
	summary := agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("Summary: listed the files."))
	changed := msgs[3]
	changed.Content = agentctx.Text("rewritten")
	out := []agentctx.Message{summary, changed, msgs[5], msgs[6], msgs[7]}
	match, _ := gemcontents.Match(msgs, out, nil)
	got := string(gemcontents.AppendSplice(nil, contents, msgs, refs, out, match))
	want := `[{"role":"user","parts":[{"text":"Summary: listed the files."}]},` + conversation[3] + `,` +
		`{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"package b"}}},{"text":"Also check c.go."}]},` + conversation[5] + `]`
	if got != want {
		t.Errorf("compacted:\n got %s\nwant %s", got, want)
	}
}

func text(m *agentctx.Message) string {
	if m.Content.IsText() {
		return m.Content.Text()
	}
	var s []string
	for _, b := range m.Content.Blocks() {
		s = append(s, b.Text)
	}
	return strings.Join(s, "\n")
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
