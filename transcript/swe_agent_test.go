package transcript_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// TestToolCallIDs: a tool message naming its call in a one-element
// "tool_call_ids" list (SWE-agent) answers that call, and is written back
// as a list.
func TestToolCallIDs(t *testing.T) {
	tests := []struct {
		name, in, id string
		renamed      string // the message after ToolCallID = "new"
	}{
		{"one id", `{"role":"tool","content":"ok","tool_call_ids":["call_1"]}`, "call_1",
			`{"role":"tool","content":"ok","tool_call_ids":["new"]}`},
		{"tool_call_id wins", `{"role":"tool","tool_call_ids":["a"],"tool_call_id":"b","content":"ok"}`, "b",
			`{"role":"tool","tool_call_ids":["a"],"tool_call_id":"new","content":"ok"}`},
		{"tool_call_id first", `{"role":"tool","tool_call_id":"b","tool_call_ids":["a"],"content":"ok"}`, "b",
			`{"role":"tool","tool_call_id":"new","tool_call_ids":["a"],"content":"ok"}`},
		{"two ids stay opaque", `{"role":"tool","tool_call_ids":["a","b"],"content":"ok"}`, "",
			`{"role":"tool","tool_call_ids":["a","b"],"content":"ok","tool_call_id":"new"}`},
		{"not a string", `{"role":"tool","tool_call_ids":[1],"content":"ok"}`, "",
			`{"role":"tool","tool_call_ids":[1],"content":"ok","tool_call_id":"new"}`},
		{"escaped id kept as written", `{"role":"tool","tool_call_ids":[ "functions.bash:0\u0021" ],"content":"ok"}`, "functions.bash:0!",
			`{"role":"tool","tool_call_ids":["new"],"content":"ok"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := agentctx.DecodeMessage([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if m.ToolCallID != tt.id {
				t.Errorf("ToolCallID = %q, want %q", m.ToolCallID, tt.id)
			}
			out, _ := m.AppendJSON(nil)
			if want := compactLines([]byte(tt.in), false); string(out)+"\n" != string(want) {
				t.Errorf("round trip = %s, want %s", out, want)
			}
			m.ToolCallID = "new"
			if out, _ := m.AppendJSON(nil); string(out) != tt.renamed {
				t.Errorf("after rename = %s, want %s", out, tt.renamed)
			}
			if tt.id != "" && !strings.Contains(tt.in, `"tool_call_id"`) {
				if _, err := m.WithField("tool_call_ids", []string{"x"}); err == nil {
					t.Error("WithField replaced the list that holds ToolCallID")
				}
			}
		})
	}
}

// TestSWEAgentEdit: editing a result of a SWE-agent trajectory changes that
// result only; trajectory, info and the tool_call_ids lists are kept.
func TestSWEAgentEdit(t *testing.T) {
	doc, data := readDoc(t, "../testdata/swe_agent.traj")
	var seen []string
	msgs := agentctx.MapToolResults(doc.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		seen = append(seen, r.ID)
		return agentctx.Text("[cleared]"), r.ID == "toolu_02DeF"
	})
	if strings.Join(seen, " ") != "toolu_01AbC toolu_02DeF toolu_03GhI" {
		t.Errorf("results %v", seen)
	}
	out, err := doc.WithMessages(msgs).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	const old = `"content":[{"type":"text","text":"OBSERVATION:\nThe file /testbed/pager.py has been edited. \u00e9\u2192"}]`
	want := strings.Replace(string(compactLines(data, false)), old, `"content":"[cleared]"`, 1)
	if string(out) != want {
		t.Errorf("edit changed more than the one result\n got: %s\nwant: %s", out, want)
	}
}

// TestReusedIDsTurn: results of calls that reuse one id tell their turn.
func TestReusedIDsTurn(t *testing.T) {
	doc, _ := readDoc(t, "../testdata/swe_agent_reused_ids.traj")
	var turns []int
	for r := range agentctx.ToolResults(doc.Messages) {
		if r.ID != "functions.bash:0" {
			t.Errorf("id %q", r.ID)
		}
		turns = append(turns, r.Turn)
	}
	if len(turns) != 3 || turns[0] != 2 || turns[1] != 4 || turns[2] != 6 {
		t.Errorf("turns %v, want [2 4 6]", turns)
	}
	fixed, repairs := agentctx.RepairPairing(doc.Messages)
	if len(repairs) != 0 || len(fixed) != len(doc.Messages) {
		t.Errorf("repair changed a valid history: %+v", repairs)
	}
}

// TestTrajectoriesPerLine: JSON Lines of records whose history holds
// messages (SWE-agent trajectories, one per line) are one conversation per
// record; an exit message stays out of the messages and in the output.
func TestTrajectoriesPerLine(t *testing.T) {
	in := `{"instance_id":"a","history":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"y"}]}]}` + "\n" +
		`{"instance_id":"b","history":[{"role":"user","content":"z"},{"role":"exit","content":""}]}` + "\n"
	doc, err := transcript.ParseDocument(context.Background(), []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	convs := doc.Conversations()
	if doc.Format != transcript.FormatOpenHands || len(doc.Messages) != 3 || len(convs) != 2 || convs[1].Name != "b" || len(convs[1].Messages) != 1 {
		t.Fatalf("%s: %d messages, %d conversations", doc.Format, len(doc.Messages), len(convs))
	}
	if len(doc.NonModel()) != 1 || len(convs[1].NonModel()) != 1 {
		t.Errorf("non-model messages: %d, %d", len(doc.NonModel()), len(convs[1].NonModel()))
	}
	out, _ := doc.AppendJSON(nil)
	if want := in; string(out) != want {
		t.Errorf("output\n got: %s\nwant: %s", out, want)
	}
}

// TestDetectFormat: the shape is told from the content, not one key.
func TestDetectFormat(t *testing.T) {
	const ohEvent = `{"id":1,"source":"agent","action":"run","args":{"command":"ls"},"timestamp":"2025-01-01T00:00:00"}`
	tests := []struct {
		name, in string
		format   agentctx.Format
		msgs     int
	}{
		{"history of messages with content parts", `{"history":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"go"}]}],"info":{}}`, transcript.FormatSWEAgent, 2},
		{"history of messages, tool_calls and tool_call_ids", `{"history":[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","content":[{"type":"text","text":"ok"}],"tool_call_ids":["c"]}],"trajectory":[]}`, transcript.FormatSWEAgent, 2},
		{"history of OpenHands events", `{"instance_id":"x","history":[` + ohEvent + `]}`, transcript.FormatOpenHands, 0},
		{"history of messages beside a type", `{"type":"trajectory","history":[{"role":"user","content":"go"}]}`, transcript.FormatSWEAgent, 1},
		{"empty history with a trajectory", `{"history":[],"trajectory":[]}`, transcript.FormatSWEAgent, 0},
		{"empty history alone", `{"history":[]}`, transcript.FormatOpenHands, 0},
		{"mini-swe-agent by trajectory_format", `{"messages":[{"role":"user","content":"x"}],"trajectory_format":"mini-swe-agent-1.1"}`, transcript.FormatMiniSWEAgent, 1},
		{"mini-swe-agent by info.mini_version", `{"info":{"mini_version":"1.0"},"messages":[]}`, transcript.FormatMiniSWEAgent, 0},
		{"mini-swe-agent by an exit message", `{"messages":[{"role":"user","content":"x"},{"role":"exit","content":""}]}`, transcript.FormatMiniSWEAgent, 1},
		{"request body", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, agentctx.FormatObject, 1},
		{"claude code after a stray message line", `{"role":"user","content":"x"}` + "\n" + `{"type":"user","message":{"role":"user","content":"a"}}` + "\n" + `{"type":"progress"}`, transcript.FormatClaudeCode, 1},
		{"exit in JSON Lines", `{"role":"user","content":"x"}` + "\n" + `{"role":"exit","content":""}`, agentctx.FormatJSONL, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := transcript.ParseDocument(context.Background(), []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || len(doc.Messages) != tt.msgs {
				t.Errorf("%s with %d messages, want %s with %d", doc.Format, len(doc.Messages), tt.format, tt.msgs)
			}
			out, err := doc.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != transcript.FormatOpenHands && doc.Format != transcript.FormatClaudeCode {
				if want := compactLines([]byte(tt.in), doc.Format == agentctx.FormatJSONL); string(out) != string(want) {
					t.Errorf("round trip\n got: %s\nwant: %s", out, want)
				}
			}
		})
	}
}

// TestFormatsExamples: every listed format's example reads as that format,
// holds messages that pair up, and writes back as documented.
func TestFormatsExamples(t *testing.T) {
	seen := map[agentctx.Format]bool{}
	for _, f := range transcript.Formats() {
		t.Run(string(f.Format), func(t *testing.T) {
			seen[f.Format] = true
			doc, err := transcript.ParseDocument(context.Background(), []byte(f.Example))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != f.Format || len(doc.Messages) < 2 {
				t.Errorf("example reads as %s with %d messages", doc.Format, len(doc.Messages))
			}
			if rep := agentctx.ValidatePairing(doc.Messages); !rep.Valid {
				t.Errorf("pairing: %v", rep.Issues)
			}
			if f.Name == "" || f.DetectedBy == "" || f.WrittenAs == "" {
				t.Error("undocumented")
			}
			out, _ := doc.AppendJSON(nil)
			switch f.Format {
			case transcript.FormatClaudeCode, transcript.FormatOpenHands:
			default:
				if want := compactLines([]byte(f.Example), f.Format == agentctx.FormatJSONL); string(out) != string(want) {
					t.Errorf("round trip\n got: %s\nwant: %s", out, want)
				}
			}
		})
	}
	if len(seen) != 7 {
		t.Errorf("%d formats listed", len(seen))
	}
}
