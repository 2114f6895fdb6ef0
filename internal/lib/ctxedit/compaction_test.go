package ctxedit

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

func TestWithEdits(t *testing.T) {
	for _, c := range []struct {
		cm    string
		edits []string
		want  string
	}{
		{``, nil, `{"edits":[]}`},
		{`{"edits":[{"type":"a"}]}`, nil, `{"edits":[{"type":"a"}]}`},
		{`{"edits":[{"type":"a"}]}`, []string{`{"type":"b"}`, `{"type":"c"}`}, `{"edits":[{"type":"a"},{"type":"b"},{"type":"c"}]}`},
		{``, []string{`{"type":"b"}`, `{"type":"c"}`}, `{"edits":[{"type":"b"},{"type":"c"}]}`},
	} {
		var es [][]byte
		for _, e := range c.edits {
			es = append(es, []byte(e))
		}
		if got := string(WithEdit([]byte(c.cm), es...)); got != c.want {
			t.Errorf("WithEdit(%s, %v) = %s, want %s", c.cm, c.edits, got, c.want)
		}
	}
}

func TestCompactionHelpers(t *testing.T) {
	dec := func(js string) agentctx.Message {
		m, err := agentctx.DecodeMessage([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	msgs := []agentctx.Message{
		dec(`{"role":"user","content":"go"}`),
		dec(`{"role":"assistant","content":[{"type":"compaction","content":""},{"type":"text","text":"ok"}]}`),
		dec(`{"role":"user","content":"more"}`),
	}
	if k := CompactionIndex(msgs); k != 1 {
		t.Errorf("CompactionIndex = %d", k)
	}
	if k := CompactionIndex(msgs[:1]); k != -1 {
		t.Errorf("CompactionIndex without a block = %d", k)
	}
	// Claude Code's emptied block is restored; a whole one is left alone.
	block := []byte(`{"type":"compaction","content":"S","encrypted_content":"E"}`)
	m, ok := Restore(msgs[1], block)
	got, _ := m.AppendJSON(nil)
	if !ok || !strings.Contains(string(got), `"content":"S","encrypted_content":"E"`) || !strings.Contains(string(got), `"text":"ok"`) {
		t.Errorf("Restore = %v %s", ok, got)
	}
	if _, ok := Restore(m, []byte(`{"type":"compaction","content":"other"}`)); ok {
		t.Errorf("Restore replaced a whole block")
	}
	if _, ok := Restore(msgs[1], nil); ok {
		t.Errorf("Restore without a block to restore")
	}

	if got := string(CompactEdit(MinCompactTrigger, "")); got != `{"type":"compact_20260112","trigger":{"type":"input_tokens","value":50000}}` {
		t.Errorf("CompactEdit = %s", got)
	}
	summary := compact.SummaryTitle + "\n\n## Current state\n- x\n\n## " + compact.PointersTitle + "\n- Bash `ls` → tool_result_t1 (/w/tool_result_t1.txt, 10 chars)"
	in := Instructions(summary)
	if !strings.HasPrefix(in, compact.SummaryPrompt) || !strings.HasSuffix(in, "## "+compact.PointersTitle+"\n- Bash `ls` → tool_result_t1 (/w/tool_result_t1.txt, 10 chars)") || strings.Contains(in, "- x") {
		t.Errorf("Instructions = %q", in)
	}
	if got := Instructions("no pointers"); got != compact.SummaryPrompt {
		t.Errorf("Instructions without pointers = %q", got)
	}
}

// TestUncompacted: the last request's messages in their places (as sent,
// breakpoints dropped, the client's own where unchanged), then the new
// ones; nil when the places differ.
func TestUncompacted(t *testing.T) {
	dec := func(js string) agentctx.Message {
		m, err := agentctx.DecodeMessage([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	in := []agentctx.Message{
		dec(`{"role":"user","content":"go"}`),
		dec(`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}`),
		dec(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"long output"},{"type":"text","text":"reminder"}]}`),
		dec(`{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{}}]}`),
		dec(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"new","cache_control":{"type":"ephemeral"}}]}`),
	}
	last := []agentctx.Message{in[0], in[1],
		dec(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[stored: t1]","cache_control":{"type":"ephemeral"}},{"type":"text","text":"reminder"}]}`)}
	out := Uncompacted(in, last)
	enc := func(ms []agentctx.Message) string {
		var b []byte
		for i := range ms {
			b, _ = ms[i].AppendJSON(b)
		}
		return string(b)
	}
	got := enc(out)
	if len(out) != 5 || !strings.Contains(got, `[stored: t1]`) || strings.Contains(got, "long output") || strings.Count(got, "cache_control") != 1 {
		t.Errorf("Uncompacted = %s", got)
	}
	if Uncompacted(in, []agentctx.Message{in[0], in[3]}) != nil || Uncompacted(in[:1], last) != nil {
		t.Errorf("Uncompacted of messages not in their places")
	}
}
