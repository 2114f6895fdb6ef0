package agentctx_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
)

func decode(t *testing.T, s string) agentctx.Message {
	t.Helper()
	m, err := agentctx.DecodeMessage([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, m agentctx.Message) string {
	t.Helper()
	b, err := m.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMessageLossless(t *testing.T) {
	tests := []string{
		`{"role":"user","content":"caf\u00e9 \ud83d\ude80 \/ <b>&amp;</b>"}`,
		`{"content":null,"role":"assistant","tool_calls":null}`,
		`{"role":"assistant","tool_calls":[],"content":""}`,
		`{"role":"user"}`,
		`{"role":"user","content":{"weird":true}}`,
		`{"role":"user","content":[1,2]}`,
		`{"role":"user","content":[{"type":"x","text":42,"content":{"a":1},"is_error":"no"}]}`,
		`{"role":7,"tool_call_id":false,"tool_calls":"x"}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"b":[1.50,-0.0,1E3],"a":"\u0041"}}]}`,
		`{"role":"tool","tool_call_id":"c","content":"x","timestamp":1.5e12,"messageStatus":"error","\u0078":1}`,
		`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\": 1}","extra":1},"index":0}]}`,
		`{"role":"user","role":"assistant"}`,
		`{}`,
	}
	for _, in := range tests {
		if got := encode(t, decode(t, in)); got != in {
			if in == `{"role":"user","role":"assistant"}` && got == `{"role":"assistant"}` {
				continue // duplicate keys: the last one wins, as in encoding/json
			}
			t.Errorf("round trip\n got: %s\nwant: %s", got, in)
		}
	}
}

func TestMessageEdits(t *testing.T) {
	m := decode(t, `{"role":"user","z":1,"content":"a","timestamp":5}`)
	m2 := m.WithContent(agentctx.Text("b\n<c>"))
	if got, want := encode(t, m2), `{"role":"user","z":1,"content":"b\n<c>","timestamp":5}`; got != want {
		t.Errorf("WithContent: %s, want %s", got, want)
	}
	if got := encode(t, m); got != `{"role":"user","z":1,"content":"a","timestamp":5}` {
		t.Errorf("original changed: %s", got)
	}
	m3, err := m.WithField("messageStatus", "error")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := encode(t, m3), `{"role":"user","z":1,"content":"a","timestamp":5,"messageStatus":"error"}`; got != want {
		t.Errorf("WithField: %s, want %s", got, want)
	}
	if _, err := m.WithField("content", "x"); err == nil {
		t.Error("WithField accepted a typed key")
	}
	if _, err := m.WithField("bad", json.RawMessage("{")); err == nil {
		t.Error("WithField accepted invalid JSON")
	}
	stripped := agentctx.StripMetadata([]agentctx.Message{m3})
	if got, want := encode(t, stripped[0]), `{"role":"user","z":1,"content":"a"}`; got != want {
		t.Errorf("StripMetadata: %s, want %s", got, want)
	}
	// Typed fields set on a message that lacked them are appended.
	n := decode(t, `{"x":1}`)
	n.Role = agentctx.RoleTool
	n.ToolCallID = "c1"
	n.Content = agentctx.Text("out")
	if got, want := encode(t, n), `{"x":1,"role":"tool","content":"out","tool_call_id":"c1"}`; got != want {
		t.Errorf("set typed fields: %s, want %s", got, want)
	}
	// A typed key whose input value had another type is replaced once set.
	w := decode(t, `{"role":7}`)
	w.Role = "user"
	if got := encode(t, w); got != `{"role":"user"}` {
		t.Errorf("replace opaque role: %s", got)
	}
	// Invalid tool_use input set by code is an encoding error, not bad JSON.
	bad := agentctx.NewMessage("assistant", agentctx.BlockList(agentctx.ToolUseBlock("t", "n", json.RawMessage("{oops"))))
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("invalid input encoded without error")
	}
}

func TestCloneIsIndependent(t *testing.T) {
	m := decode(t, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"x"}]}]}`)
	c := m.Clone()
	c.Content.Blocks()[0].Content.Blocks()[0].Text = "changed"
	c.Content.Blocks()[0].ToolUseID = "b"
	if got := encode(t, m); got != `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"x"}]}]}` {
		t.Errorf("Clone shares memory: %s", got)
	}
}

func TestChars(t *testing.T) {
	tests := []struct {
		name string
		c    agentctx.Content
		want int
		text string
	}{
		{"absent", agentctx.Content{}, 0, ""},
		{"empty", agentctx.Text(""), 0, ""},
		{"ascii", agentctx.Text(strings.Repeat("a", 100)), 100, strings.Repeat("a", 100)},
		{"code points not bytes", agentctx.Text("日本語🚀"), 4, "日本語🚀"},
		{"emoji is one, not two UTF-16 units", agentctx.Text("🚀"), 1, "🚀"},
		{"blocks are compact JSON without HTML escaping",
			agentctx.BlockList(agentctx.TextBlock("<a&b>")), 32, `[{"type":"text","text":"<a&b>"}]`},
		{"null", agentctx.Null(), 4, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Chars(); got != tt.want {
				t.Errorf("Chars() = %d, want %d", got, tt.want)
			}
			if got := tt.c.AsText(); got != tt.text {
				t.Errorf("AsText() = %q, want %q", got, tt.text)
			}
			if got := string(tt.c.AppendText([]byte("pre:"))); got != "pre:"+tt.text {
				t.Errorf("AppendText() = %q, want %q", got, "pre:"+tt.text)
			}
		})
	}
	// Decoded blocks are measured in canonical form: escapes that
	// JSON.stringify would not write are normalized; member order is kept.
	m := decode(t, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"text":"caf\u00e9\/\u003c", "type":"text"}]}]}`)
	inner := m.Content.Blocks()[0].Content
	if got, want := inner.AsText(), `[{"text":"café/<","type":"text"}]`; got != want {
		t.Errorf("canonical AsText = %s, want %s", got, want)
	}
	if got := inner.Chars(); got != 33 {
		t.Errorf("canonical Chars = %d, want 33", got)
	}
}

func TestTimestamp(t *testing.T) {
	want := time.Date(2026, 11, 22, 7, 4, 0, 0, time.UTC)
	tests := []struct {
		in string
		ok bool
	}{
		{`1795331040000`, true},
		{`1795331040`, true},
		{`1795331040.000`, true},
		{`"2026-11-22T07:04:00Z"`, true},
		{`"2026-11-22T08:04:00+01:00"`, true},
		{`"2026-11-22T07:04:00"`, true},
		{`"1795331040000"`, true},
		{`"yesterday"`, false},
		{`null`, false},
		{`{"a":1}`, false},
		{`1e300`, false},
	}
	for _, tt := range tests {
		m := decode(t, `{"role":"tool","timestamp":`+tt.in+`}`)
		got, ok := m.Timestamp()
		if ok != tt.ok || (ok && !got.Equal(want)) {
			t.Errorf("timestamp %s = %v, %v; want %v, %v", tt.in, got, ok, want, tt.ok)
		}
	}
	m := decode(t, `{"role":"tool","extra":{"timestamp":1795331040.25}}`)
	if got, ok := m.Timestamp(); !ok || !got.Equal(want.Add(250*time.Millisecond)) {
		t.Errorf("extra.timestamp = %v %v", got, ok)
	}
	set := agentctx.NewMessage("user", agentctx.Text("x")).WithTimestamp(want)
	if got := encode(t, set); got != `{"role":"user","content":"x","timestamp":1795331040000}` {
		t.Errorf("WithTimestamp: %s", got)
	}
	if s := decode(t, `{"role":"tool","messageStatus":"error"}`).Status(); s != "error" {
		t.Errorf("Status() = %q", s)
	}
}

func TestToolIterators(t *testing.T) {
	doc, _ := readDoc(t, "testdata/openai_chat.json")
	var ids []string
	for r := range agentctx.ToolResults(doc.Messages) {
		ids = append(ids, r.ID)
		if !r.IsMessage() {
			t.Errorf("OpenAI result %s is not a message", r.ID)
		}
	}
	if strings.Join(ids, ",") != "call_1,call_2" {
		t.Errorf("results = %v", ids)
	}
	names := agentctx.ToolNames(doc.Messages)
	if names["call_2"] != "terminal-execute" {
		t.Errorf("names = %v", names)
	}
	a, _ := readDoc(t, "testdata/anthropic_request.json")
	var got []string
	for r := range agentctx.ToolResults(a.Messages) {
		got = append(got, r.ID)
	}
	// web_search_tool_result is not a tool_result block.
	if strings.Join(got, ",") != "toolu_01A,toolu_01C,toolu_01B" {
		t.Errorf("anthropic results = %v", got)
	}
	n := 0
	for range agentctx.ToolUses(a.Messages) {
		n++
		break
	}
	if n != 1 {
		t.Error("iterator did not stop")
	}
}
