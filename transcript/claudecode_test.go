package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

func roles(doc *agentctx.Document) string {
	var out []string
	for _, m := range doc.Messages {
		out = append(out, m.Role)
	}
	return strings.Join(out, " ")
}

// TestClaudeCodeCompactBoundary: by default a compacted session is read
// from its last compact_boundary on (the continuation summary first); the
// whole history is an option; the boundary is reported either way.
func TestClaudeCodeCompactBoundary(t *testing.T) {
	data := readFile(t, "../testdata/claude_code_compacted.jsonl")
	tests := []struct {
		name     string
		opts     transcript.ReadOptions
		roles    string
		boundary agentctx.CompactBoundary
		skipped  map[string]int
		notice   string
		golden   string
	}{
		{
			name:     "live context",
			roles:    "user user assistant user assistant",
			boundary: agentctx.CompactBoundary{Line: 6, Message: 0, Trigger: "auto", PreTokens: 158321},
			skipped:  map[string]int{"before compact boundary": 5, "system/compact_boundary": 1, "progress": 1, "system/turn_duration": 1},
			notice:   "8 records skipped: before compact boundary 5, progress 1, system/compact_boundary 1, system/turn_duration 1; 1 compact boundary: the live context is read, from line 6 on",
			golden:   "../testdata/claude_code_compacted.golden.jsonl",
		},
		{
			name:     "whole history",
			opts:     transcript.ReadOptions{WholeHistory: true},
			roles:    "user assistant user assistant user user assistant user assistant",
			boundary: agentctx.CompactBoundary{Line: 6, Message: 4, Trigger: "auto", PreTokens: 158321},
			skipped:  map[string]int{"summary": 1, "system/compact_boundary": 1, "progress": 1, "system/turn_duration": 1},
			notice:   "4 records skipped: progress 1, summary 1, system/compact_boundary 1, system/turn_duration 1; 1 compact boundary: the whole history is read",
			golden:   "../testdata/claude_code_compacted_whole.golden.jsonl",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := tt.opts.ParseDocument(context.Background(), append([]byte(nil), data...))
			if err != nil {
				t.Fatal(err)
			}
			if got := roles(doc); got != tt.roles {
				t.Errorf("roles = %s, want %s", got, tt.roles)
			}
			if len(doc.Boundaries) != 1 || doc.Boundaries[0] != tt.boundary {
				t.Errorf("boundaries = %+v, want %+v", doc.Boundaries, tt.boundary)
			}
			if !reflect.DeepEqual(doc.SkippedKinds, tt.skipped) {
				t.Errorf("skipped = %v, want %v", doc.SkippedKinds, tt.skipped)
			}
			if got := doc.Notice(); got != tt.notice {
				t.Errorf("notice = %q\nwant     %q", got, tt.notice)
			}
			if rep := agentctx.ValidatePairing(doc.Messages); !rep.Valid {
				t.Errorf("pairing: %v", rep.Issues)
			}
			// The summary Claude Code continued from is the first message
			// of the live context.
			at := doc.Boundaries[0].Message
			if s := doc.Messages[at].Content.AsText(); !strings.HasPrefix(s, "This session is being continued") {
				t.Errorf("message after the boundary = %.60q", s)
			}
			out, err := doc.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, out)
			again, err := transcript.ParseDocument(context.Background(), append([]byte(nil), out...))
			if err != nil {
				t.Fatal(err)
			}
			out2, _ := again.AppendJSON(nil)
			if !bytes.Equal(out, out2) || again.Format != transcript.FormatClaudeCode {
				t.Error("output does not read back as itself")
			}
		})
	}
}

// TestClaudeCodeSubagent: a subagent's file, every record isSidechain, is a
// conversation of its own; in a main session, sidechain records are
// skipped and counted.
func TestClaudeCodeSubagent(t *testing.T) {
	doc, data := readDoc(t, "../testdata/claude_code_subagent.jsonl")
	if doc.Format != transcript.FormatClaudeCode || roles(doc) != "user assistant user assistant" {
		t.Fatalf("%s: %s", doc.Format, roles(doc))
	}
	if doc.Skipped != 0 || doc.Notice() != "" {
		t.Errorf("skipped %d: %q", doc.Skipped, doc.Notice())
	}
	if rep := agentctx.ValidatePairing(doc.Messages); !rep.Valid || rep.ToolUses != 1 {
		t.Errorf("pairing %+v", rep)
	}
	// Nothing merged: the output is the input, record for record.
	out, err := doc.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := compactLines(data, true); !bytes.Equal(out, want) {
		t.Errorf("round trip differs\n got: %s\nwant: %s", out, want)
	}

	// The same records inside a main session are skipped.
	main := append(readFile(t, "../testdata/claude_code.jsonl"), data...)
	mixed, err := transcript.ParseDocument(context.Background(), main)
	if err != nil {
		t.Fatal(err)
	}
	if mixed.SkippedKinds["sidechain"] != 5 {
		t.Errorf("sidechain records skipped = %d, want 5", mixed.SkippedKinds["sidechain"])
	}
}

// TestNoticeNeverSilent: a document that yields no message, or from which
// records were skipped, says so.
func TestNoticeNeverSilent(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"messages only", `[{"role":"user","content":"hi"}]`, ""},
		{"empty array", `[]`, "no messages (json)"},
		{"request body without messages", `{"model":"m","messages":[]}`, "no messages (object)"},
		{"claude code without messages", `{"type":"summary","summary":"x","leafUuid":"u"}` + "\n" + `{"type":"progress","uuid":"p"}`,
			"no messages (claude-code); 2 records skipped: progress 1, summary 1"},
		{"swe-agent with an empty history", `{"history":[],"trajectory":[],"info":{}}`, "no messages (swe-agent)"},
		{"openhands record without events", `{"instance_id":"x","history":[]}`, "no messages (openhands)"},
		{"roles no model accepts", `[{"role":"user","content":"x"},{"role":"model","content":"y"},{"role":"exit","content":""}]`, `2 messages with role "model", "exit" kept in the file, not sent to the model`},
		{"exit only", `{"messages":[{"role":"exit","content":""}]}`, `no messages (mini-swe-agent); 1 message with role "exit" kept in the file, not sent to the model`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := transcript.ParseDocument(context.Background(), []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := doc.Notice(); got != tt.want {
				t.Errorf("notice = %q, want %q", got, tt.want)
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPartialLastLine: a session file being written ends in an incomplete
// line; it is skipped and reported, the rest is read. An incomplete line
// before the last is still an error.
func TestPartialLastLine(t *testing.T) {
	whole, err := os.ReadFile("../testdata/claude_code.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := transcript.ParseDocument(context.Background(), whole)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimRight(whole, "\n"), []byte("\n"))
	last := lines[len(lines)-1]
	partial := append(append([]byte{}, whole...), last[:len(last)/2]...)
	doc, err := transcript.ParseDocument(context.Background(), partial)
	if err != nil {
		t.Fatalf("partial last line: %v", err)
	}
	if doc.Format != want.Format || len(doc.Messages) != len(want.Messages) {
		t.Errorf("read %s with %d messages, want %s with %d", doc.Format, len(doc.Messages), want.Format, len(want.Messages))
	}
	if doc.PartialLine != len(lines)+1 || !strings.Contains(doc.Notice(), fmt.Sprintf("line %d is incomplete", len(lines)+1)) {
		t.Errorf("PartialLine %d, notice %q", doc.PartialLine, doc.Notice())
	}
	// Ended by a newline, a bad line was written whole: an error.
	if _, err := transcript.ParseDocument(context.Background(), append(append([]byte{}, partial...), '\n')); err == nil {
		t.Error("a bad last line ended by a newline: no error")
	}
	// In the middle it is an error.
	mid := append(append(append([]byte{}, whole...), last[:len(last)/2]...), append([]byte("\n"), last...)...)
	if _, err := transcript.ParseDocument(context.Background(), mid); err == nil {
		t.Error("an incomplete line before the last: no error")
	}
	// A file of one incomplete line is an error, not an empty document.
	if _, err := transcript.ParseDocument(context.Background(), last[:len(last)/2]); err == nil {
		t.Error("only an incomplete line: no error")
	}
}

// TestClaudeCodeWriteBackDecodedApart: a Claude Code file is written back
// whole from messages that share no memory with the ones read (a caller
// that stored its history and decoded it again): a message is known by
// what it holds (role, record timestamp, message id, first tool id), not
// by a pointer. A changed copy still goes into its own record.
func TestClaudeCodeWriteBackDecodedApart(t *testing.T) {
	doc, _ := readDoc(t, "../testdata/claude_code.jsonl")
	want, err := doc.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := agentctx.MarshalMessages(doc.Messages)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := agentctx.UnmarshalMessages(stored)
	if err != nil {
		t.Fatal(err)
	}
	got, err := doc.WithMessages(msgs).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("messages decoded apart are not written back in their records\n got: %s\nwant: %s", got, want)
	}

	// A changed tool result, decoded apart, is written in its first record:
	// the file keeps as many lines, and only that line changes.
	i := 4 // user:1, the result of the Read call, one record
	b := msgs[i].Content.Blocks()[0]
	b.Content = agentctx.Text("pruned")
	msgs[i] = msgs[i].WithBlock(0, b)
	got, err = doc.WithMessages(msgs).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	if len(gl) != len(wl) {
		t.Fatalf("%d lines written, want %d:\n%s", len(gl), len(wl), got)
	}
	changed := 0
	for k := range gl {
		if !bytes.Equal(gl[k], wl[k]) {
			changed++
			if !bytes.Contains(gl[k], []byte(`"pruned"`)) || !bytes.Contains(gl[k], []byte(`"uuid"`)) {
				t.Errorf("line %d: %s", k+1, gl[k])
			}
		}
	}
	if changed != 1 {
		t.Errorf("%d lines changed, want 1:\n%s", changed, got)
	}
}
