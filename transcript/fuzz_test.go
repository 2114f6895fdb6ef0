package transcript_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// FuzzParseDocument: no input makes the reader panic; whatever it accepts
// encodes to output that reads back to the same output (round-trip stable),
// and pairing validation and repair never panic on it.
func FuzzParseDocument(f *testing.F) {
	files, _ := filepath.Glob("../testdata/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`[]`, `{}`, `{"messages":[]}`, `[{"role":"user","content":[{"type":"tool_result"}]}]`,
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"a"}]}}` + "\n" +
			`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"b"}]}}`,
		"\"\\ud800\"", `[{"role":"tool","content":"\u00e9\ud83d"}]`, `{"history":[]}`,
		`[{"source":"agent","observation":"run","content":"x","tool_call_metadata":{"tool_call_id":"a"}}]`,
		`{"history":[{"role":"tool","content":[{"type":"text","text":"x"}],"tool_call_ids":["a"]}],"trajectory":[]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"k","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"k"},{"role":"exit","content":""}]}`,
		`{"type":"system","subtype":"compact_boundary","compactMetadata":{"preTokens":5}}` + "\n" + `{"type":"user","isSidechain":true,"message":{"role":"user","content":"s"}}`,
		`[{"role":"assistant","content":[{"type":"tool_use","id":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]},{"role":"assistant","content":[{"type":"tool_use","id":"a"}]}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := transcript.ParseDocument(context.Background(), append([]byte(nil), data...))
		if err != nil {
			return
		}
		out, err := doc.AppendJSON(nil)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		doc.Notice()
		// (Claude Code and OpenHands files are written back whole, records
		// that are not messages included.)
		if len(doc.Messages) == 0 && len(doc.NonModel()) == 0 && doc.Format == agentctx.FormatJSONL {
			if len(out) != 0 {
				t.Fatalf("empty %s document encoded as %q", doc.Format, out)
			}
			return // JSON Lines with no message is empty output
		}
		again, err := transcript.ParseDocument(context.Background(), append([]byte(nil), out...))
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		out2, err := again.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
		for _, m := range doc.Messages {
			m.Content.Chars()
			m.Timestamp()
		}
		rep := agentctx.ValidatePairing(doc.Messages)
		fixed, _ := agentctx.RepairPairing(doc.Messages)
		if _, err := agentctx.MarshalMessages(fixed); err != nil {
			t.Fatal(err)
		}
		if rep.Valid && len(fixed) != len(doc.Messages) {
			t.Fatal("repair changed a valid history")
		}
		for _, m := range fixed {
			if !agentctx.IsModelRole(m.Role) {
				t.Fatalf("repair kept a role %q message", m.Role)
			}
		}
	})
}

// FuzzWriteBack: a transcript whose tool results were all replaced is
// written back in its shape and reads back as the edited messages, as many
// and in the same roles (messages are found in the file by what they hold).
func FuzzWriteBack(f *testing.F) {
	for _, p := range []string{"../testdata/claude_code.jsonl", "../testdata/claude_code_subagent.jsonl", "../testdata/claude_code_compacted.jsonl", "../testdata/openhands_output.jsonl", "../testdata/swe_agent.traj"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint8(1))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, every uint8) {
		doc, err := transcript.ParseDocument(context.Background(), append([]byte(nil), data...))
		if err != nil || len(doc.Conversations()) != 1 {
			return
		}
		k := 0
		edited := agentctx.MapToolResults(doc.Messages, func(agentctx.ToolResult) (agentctx.Content, bool) {
			k++
			return agentctx.Text("[edited]"), every > 0 && k%int(every) == 0
		})
		out, err := doc.WithMessages(edited).AppendJSON(nil)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := transcript.ParseDocument(context.Background(), out)
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		if len(again.Messages) != len(edited) {
			t.Fatalf("%d messages read back, %d written\n%s", len(again.Messages), len(edited), out)
		}
		for i := range edited {
			if again.Messages[i].Role != edited[i].Role {
				t.Fatalf("message %d: role %q read back, %q written", i, again.Messages[i].Role, edited[i].Role)
			}
		}
	})
}
