package agentctx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// The commonest messages and blocks share their member lists (issue 24: a
// request of 100,000 small messages held 47 MB of them), and a message
// decoded so reads, encodes and edits exactly as one decoded with lists
// of its own (DecodeMessage).
func TestCommonShapesShareTheirMembers(t *testing.T) {
	cases := []struct {
		json string
		// the message's members shared; every block's, tool call's and
		// call function's
		msg, blocks bool
	}{
		{`{"role":"user","content":"plain"}`, true, true},
		{`{"role":"assistant","content":[{"type":"text","text":"a\nb"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls  -la"}}]}`, true, true},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out"}]}`, true, true},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}]}]}`, true, true},
		// A member the shapes do not have, another order, another token:
		// members of their own (a tool_use's input of any JSON type is the
		// block's Input: shared).
		{`{"role":"user","content":"caf\u00e9"}`, false, true},
		{`{"content":"x","role":"user"}`, false, true},
		{`{"role" : "user" , "content" : [ {"text" : "spaced", "type" : "text"} ] }`, true, false},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","is_error":false}]}`, true, true},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","is_error":true}]}`, true, true},
		// Claude Code's order, and its tool_use blocks' caller
		{`{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"out"}]}`, true, true},
		{`{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"Exit code 1","is_error":true}]}`, true, true},
		{`{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"x"}],"is_error":false}]}`, true, true},
		{`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"caller":{"type":"direct"}}]}`, true, true},
		{`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"caller":{"type":"code_execution_20250825","tool_id":"srv_1"}}]}`, true, false},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","is_error":null}]}`, true, false},
		{`{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}`, true, false},
		{`{"role":"user","content":"x","timestamp":"2026-01-01T00:00:00Z"}`, false, true},
		// OpenAI Chat Completions: calls and the tool messages answering
		// them (a call's arguments, held by its Function, kept once)
		{`{"role":"tool","tool_call_id":"c1","content":"done"}`, true, true},
		{`{"role":"tool","content":"done","tool_call_id":"c1"}`, true, true},
		{`{"role":"tool","content":"done","tool_call_id":"c1","name":"execute_bash"}`, false, true},
		{`{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"execute_bash","arguments":"{\"command\": \"ls\"}"}}]}`, true, true},
		{`{"role":"assistant","content":"Two.","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}]}`, true, true},
		{`{"role":"assistant","content":"","tool_calls":[]}`, true, true},
		{`{"role":"assistant","content":"x","tool_calls":null}`, false, true},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}`, false, true},
		{`{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"},"index":0}]}`, true, false},
		{`{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}","extra":true}}]}`, true, false},
		{`{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":"not an object"}]}`, true, false},
		{`{"role":"assistant","content":"x","tool_calls":[{"type":"function","id":"c1","function":{"arguments":"{}","name":"a"}}]}`, true, false},
		{`{"role":"user","content":[{"type":"tool_use","id":"t1","name":"Bash","input":"not an object"}]}`, true, true},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x","citations":[]}]}]}`, true, false},
	}
	isShared := func(ms []member) bool {
		for _, sh := range memberShapes {
			if len(ms) > 0 && len(sh) == len(ms) && &sh[0] == &ms[0] {
				return true
			}
		}
		return false
	}
	for _, tc := range cases {
		c := tc.json
		want, err := DecodeMessage([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeOwnedMessage([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		if isShared(got.members) != tc.msg {
			t.Errorf("%s: message's members shared %v, want %v", c, !tc.msg, tc.msg)
		}
		all := true
		var walk func(bs []Block)
		walk = func(bs []Block) {
			for _, b := range bs {
				all = all && isShared(b.members)
				walk(b.Content.Blocks())
			}
		}
		walk(got.Content.Blocks())
		for _, c := range got.ToolCalls {
			all = all && isShared(c.members) && isShared(c.Function.members)
		}
		if all != tc.blocks {
			t.Errorf("%s: every block's members shared %v, want %v", c, all, tc.blocks)
		}
		same := func(what string, x, y Message) {
			t.Helper()
			a, err1 := x.AppendJSON(nil)
			b, err2 := y.AppendJSON(nil)
			if (err1 == nil) != (err2 == nil) || !bytes.Equal(a, b) {
				t.Errorf("%s, %s:\n got %s (%v)\nwant %s (%v)", c, what, b, err2, a, err1)
			}
			if x.Content.AsText() != y.Content.AsText() || x.Content.Chars() != y.Content.Chars() {
				t.Errorf("%s, %s: counted text differs", c, what)
			}
		}
		same("as decoded", want, got)
		for _, k := range []string{"role", "content", "tool_call_ids", "timestamp", "tool_calls", "name"} {
			x, okx := want.Field(k)
			y, oky := got.Field(k)
			if okx != oky || !bytes.Equal(x, y) {
				t.Errorf("%s: Field(%q) = %s %v, want %s %v", c, k, y, oky, x, okx)
			}
		}
		// Every typed field set to another value, and to its zero value
		// (a present member is written even empty; an absent one is not).
		edits := []func(Message) Message{
			func(m Message) Message { m.Role = ""; return m },
			func(m Message) Message { m.Role = "assistant"; return m },
			func(m Message) Message { return m.WithContent(Content{}) },
			func(m Message) Message { return m.WithContent(Text("")) },
			func(m Message) Message { m.ToolCallID = "c9"; return m },
			func(m Message) Message { m, _ = m.WithField("extra", 1); return m },
			func(m Message) Message { return m.WithoutFields("timestamp") },
			func(m Message) Message { return m.Clone() },
			func(m Message) Message { m.ToolCalls = nil; return m },
			func(m Message) Message { m.ToolCalls = []ToolCall{}; return m },
			func(m Message) Message {
				m.ToolCalls = append(slices.Clip(m.ToolCalls), ToolCall{ID: "c9", Type: "function", Function: FunctionCall{Name: "n", Arguments: "{}"}})
				return m
			},
		}
		for i := range got.ToolCalls {
			for _, f := range []func(*ToolCall){
				func(c *ToolCall) { c.ID = "" },
				func(c *ToolCall) { c.ID = "z" },
				func(c *ToolCall) { c.Type = "" },
				func(c *ToolCall) { c.Function.Name = "" },
				func(c *ToolCall) { c.Function.Name = "other" },
				func(c *ToolCall) { c.Function.Arguments = "" },
				func(c *ToolCall) { c.Function.Arguments = `{"a": 1}` },
			} {
				edits = append(edits, func(m Message) Message {
					m.ToolCalls = slices.Clone(m.ToolCalls)
					f(&m.ToolCalls[i])
					return m
				})
			}
		}
		for i := range got.Content.Blocks() {
			for _, f := range []func(*Block){
				func(b *Block) { b.Type = "" },
				func(b *Block) { b.Text = "" },
				func(b *Block) { b.Text = "new" },
				func(b *Block) { b.ID = "" },
				func(b *Block) { b.Name = "" },
				func(b *Block) { b.Input = nil },
				func(b *Block) { b.Input = json.RawMessage(`{"a": 1}`) },
				func(b *Block) { b.Input = json.RawMessage(`{bad`) },
				func(b *Block) { b.ToolUseID = "" },
				func(b *Block) { b.Content = Content{} },
				func(b *Block) { b.Content = Text("") },
				func(b *Block) { b.IsError = true },
				func(b *Block) { b.IsError = false },
				func(b *Block) { b.Thinking = "t" },
			} {
				edits = append(edits, func(m Message) Message {
					b := m.Content.Blocks()[i]
					f(&b)
					return m.WithBlock(i, b)
				})
			}
		}
		for k, edit := range edits {
			same("edit "+string(rune('a'+k%26)), edit(want), edit(got))
		}
	}
}

// TestContentIsSmall holds the size of what every decoded message and
// block carries: a Content was 72 bytes (a string, a slice of blocks and
// a slice for other JSON), so a Message was 152 and a Block 224, and a
// proxy keeping a request of 100,000 small messages held 9 MB for fields
// no message uses (issue 24, item 7). The text and the other JSON share
// one string now. Decoded messages still compare as values: two decodes
// of the same bytes are reflect.DeepEqual, of other bytes are not.
func TestContentIsSmall(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max uintptr
	}{
		{"Content", unsafe.Sizeof(Content{}), 48},
		{"Message", unsafe.Sizeof(Message{}), 128},
		{"Block", unsafe.Sizeof(Block{}), 200},
	} {
		if tc.size > tc.max {
			t.Errorf("a %s takes %d bytes, want at most %d", tc.name, tc.size, tc.max)
		}
	}
	for _, raw := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`,
		`{"role":"user","content":{"odd":[1,2]}}`,
		`{"role":"user","content":[]}`,
	} {
		a, err := DecodeOwnedMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := DecodeMessage([]byte(raw))
		c, _ := DecodeOwnedMessage([]byte(raw))
		if !reflect.DeepEqual(a.Content, c.Content) || !reflect.DeepEqual(a.Content.Raw(), b.Content.Raw()) {
			t.Errorf("%s: two decodes differ", raw)
		}
		if got, _ := a.AppendJSON(nil); string(got) != raw {
			t.Errorf("%s: encodes as %s", raw, got)
		}
	}
	x, _ := DecodeMessage([]byte(`{"role":"user","content":{"odd":1}}`))
	y, _ := DecodeMessage([]byte(`{"role":"user","content":{"odd":2}}`))
	if reflect.DeepEqual(x.Content, y.Content) || string(x.Content.Raw()) != `{"odd":1}` {
		t.Error("other JSON contents compare equal, or Raw lost them")
	}
	// Raw is the caller's: writing it changes no message.
	r := x.Content.Raw()
	r[2] = 'X'
	if got, _ := x.AppendJSON(nil); string(got) != `{"role":"user","content":{"odd":1}}` {
		t.Errorf("writing Raw changed the message: %s", got)
	}
}

// A member with no typed field that a shape holds (a tool_use's caller) is
// handed out as a copy: every message of the shape shares its bytes.
func TestShapeBytesAreNotHandedOut(t *testing.T) {
	raw := `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{},"caller":{"type":"direct"}}]}`
	m1, err := DecodeOwnedMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m1.Content.Blocks()[0].Field("caller")
	if !ok || string(f) != `{"type":"direct"}` {
		t.Fatalf("caller = %s, %v", f, ok)
	}
	for i := range f {
		f[i] = '#' // a caller's mistake: it stays its own
	}
	m2, err := DecodeOwnedMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Message{m1, m2} {
		if enc, err := m.AppendJSON(nil); err != nil || string(enc) != raw {
			t.Errorf("after a Field's bytes were written: %s (%v)", enc, err)
		}
	}
}
