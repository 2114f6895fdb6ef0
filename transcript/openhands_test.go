package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

func readOpenHands(t *testing.T) *agentctx.Document {
	t.Helper()
	data, err := os.ReadFile("../testdata/openhands_output.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := transcript.ParseDocument(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestOpenHandsConversations(t *testing.T) {
	doc := readOpenHands(t)
	if doc.Format != transcript.FormatOpenHands {
		t.Fatalf("format %q, want %q", doc.Format, transcript.FormatOpenHands)
	}
	convs := doc.Conversations()
	if len(convs) != 2 || convs[0].Name != "calc__calc-1" || convs[1].Name != "calc__calc-2" {
		t.Fatalf("conversations: %d, names %q %q", len(convs), convs[0].Name, convs[len(convs)-1].Name)
	}
	if n := len(convs[0].Messages) + len(convs[1].Messages); n != len(doc.Messages) {
		t.Errorf("Messages holds %d, the conversations %d: want them one after another", len(doc.Messages), n)
	}
	// Two recall events and one state change are not messages.
	if doc.Skipped != 3 {
		t.Errorf("skipped %d events, want 3", doc.Skipped)
	}
	// A document of any other format is its own only conversation.
	arr, _ := transcript.ParseDocument(context.Background(), []byte(`[{"role":"user","content":"hi"}]`))
	if c := arr.Conversations(); len(c) != 1 || c[0] != arr {
		t.Errorf("array document: %d conversations", len(c))
	}
}

func TestOpenHandsImport(t *testing.T) {
	msgs := readOpenHands(t).Conversations()[0].Messages
	type want struct {
		role, content, toolCallID, status, name string
		calls                                   []string // ids of tool_calls
	}
	wants := []want{
		{role: "system", content: "You are OpenHands agent, a helpful AI assistant."},
		{role: "user", content: "Fix the failing test in /workspace/calc."},
		{role: "assistant", content: "I'll run the tests first.", calls: []string{"toolu_01"}},
		{role: "tool", toolCallID: "toolu_01", status: "error", name: "execute_bash", content: "F.\n=== FAILURES ===\n___ test_div ___\n    assert div(7, 2) == 3.5\nE   assert 3 == 3.5\n1 failed, 1 passed in 0.02s\n[The command completed with exit code 1.]"},
		{role: "assistant", content: "div uses integer division. Let me read it.", calls: []string{"toolu_02"}},
		{role: "tool", toolCallID: "toolu_02", name: "str_replace_editor"},
		{role: "user", status: "error", content: "Parameter 'command' is expected to be one of ['view', 'create', 'str_replace', 'insert', 'undo_edit']."},
		{role: "assistant", content: "Fixing div and checking the file in one response.", calls: []string{"toolu_03", "toolu_04"}},
		{role: "tool", toolCallID: "toolu_03", name: "str_replace_editor", content: "The file /workspace/calc/calc.py has been edited."},
		{role: "tool", toolCallID: "toolu_04", name: "execute_bash", content: "4:def div(a, b):\n5-    return a / b\n[The command completed with exit code 0.]"},
		{role: "assistant", calls: []string{"toolu_05"}},
	}
	if len(msgs) != len(wants) {
		for _, m := range msgs {
			b, _ := json.Marshal(m)
			t.Logf("%s", b)
		}
		t.Fatalf("%d messages, want %d", len(msgs), len(wants))
	}
	for i, w := range wants {
		m := msgs[i]
		if m.Role != w.role || m.ToolCallID != w.toolCallID || m.Status() != w.status {
			t.Errorf("message %d: role %q id %q status %q, want %q %q %q", i, m.Role, m.ToolCallID, m.Status(), w.role, w.toolCallID, w.status)
		}
		if w.content != "" && m.Content.Text() != w.content {
			t.Errorf("message %d: content %q, want %q", i, m.Content.Text(), w.content)
		}
		if name, _ := m.Field("name"); w.name != "" && string(name) != `"`+w.name+`"` {
			t.Errorf("message %d: name %s, want %q", i, name, w.name)
		}
		var ids []string
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		if strings.Join(ids, ",") != strings.Join(w.calls, ",") {
			t.Errorf("message %d: tool calls %q, want %q", i, ids, w.calls)
		}
		if _, ok := m.Timestamp(); !ok {
			t.Errorf("message %d has no readable timestamp", i)
		}
	}
	// Arguments are the model's own, byte for byte.
	if got := msgs[7].ToolCalls[1].Function.Arguments; got != `{"command": "grep -n 'def div' -A1 /workspace/calc/calc.py"}` {
		t.Errorf("arguments %s", got)
	}
	// The run was cut short by the finish call: one repair makes it valid.
	if rep := agentctx.ValidatePairing(msgs); rep.Valid || len(rep.Issues) != 1 || rep.Issues[0].Kind != agentctx.IssueUnansweredCall {
		t.Errorf("pairing: %+v", rep.Issues)
	}
	fixed, _ := agentctx.RepairPairing(msgs)
	if !agentctx.ValidatePairing(fixed).Valid {
		t.Error("not valid after repair")
	}
}

// TestOpenHandsWriteBack: an OpenHands output is written back as its
// records, unchanged ones as they were; messages set on one conversation
// of several are a document of one conversation, written as JSON Lines.
func TestOpenHandsWriteBack(t *testing.T) {
	doc := readOpenHands(t)
	var buf bytes.Buffer
	if err := doc.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile("../testdata/openhands_output.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if want := compactLines(in, true); !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("round trip differs from the input:\n%s\nwant\n%s", buf.Bytes(), want)
	}
	again, err := transcript.ParseDocument(context.Background(), buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := agentctx.MarshalMessages(doc.Messages)
	b, _ := agentctx.MarshalMessages(again.Messages)
	if again.Format != transcript.FormatOpenHands || !bytes.Equal(a, b) || len(again.Conversations()) != 2 {
		t.Errorf("re-read as %s, messages equal %v", again.Format, bytes.Equal(a, b))
	}
	// WithMessages holds the new messages as one conversation.
	one := doc.WithMessages(doc.Messages[:2])
	if c := one.Conversations(); len(c) != 1 || len(c[0].Messages) != 2 {
		t.Errorf("WithMessages: %d conversations", len(c))
	}
	if len(doc.Conversations()) != 2 {
		t.Error("WithMessages changed the original document")
	}
}

func TestOpenHandsForms(t *testing.T) {
	event := `{"id":1,"timestamp":"2026-01-15T10:00:00","source":"user","message":"hello","action":"message","args":{"content":"hello"}}`
	tests := []struct {
		name, in string
		msgs     int
		convs    int
		err      string
	}{
		{"one record, one line", `{"instance_id":"a","history":[` + event + `]}`, 1, 1, ""},
		{"one record, indented", "{\n  \"instance_id\": 7,\n  \"history\": [\n" + event + "\n]\n}\n", 1, 1, ""},
		{"bare event array", `[` + event + `]`, 1, 1, ""},
		{"empty history", `{"instance_id":"a","history":[]}`, 0, 1, ""},
		{"two records", `{"instance_id":"a","history":[` + event + `]}` + "\n" + `{"instance_id":"b","history":[` + event + `,` + event + `]}`, 3, 2, ""},
		{"bad event", `{"instance_id":"a","history":[{"id":1,"source":"user","action":"message","args":[]}]}`, 0, 0, "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := transcript.ParseDocument(context.Background(), []byte(tt.in))
			if tt.err != "" {
				if err == nil || !errors.Is(err, agentctx.ErrInvalidInput) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want an input error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != transcript.FormatOpenHands || len(doc.Messages) != tt.msgs || len(doc.Conversations()) != tt.convs {
				t.Errorf("format %s, %d messages, %d conversations", doc.Format, len(doc.Messages), len(doc.Conversations()))
			}
		})
	}
	doc, _ := transcript.ParseDocument(context.Background(), []byte(tests[1].in))
	if doc.Name != "7" {
		t.Errorf("numeric instance_id: name %q", doc.Name)
	}
}
