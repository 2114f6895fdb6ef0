package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/transcript"
)

// sharedTranscripts is where the project's development transcripts live
// (outside the repository). Tests that use them skip when it is absent.
const sharedTranscripts = "../../shared/transcripts"

// TestSharedTranscriptsRoundTrip reads every shared transcript this reader
// supports and checks that encoding gives back the input (compacted) for the
// array/object/JSON Lines shapes, and a stable, pairing-valid rewrite for
// Claude Code sessions.
func TestSharedTranscriptsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedTranscripts, "*.json*"))
	if len(files) == 0 {
		t.Skip("shared transcripts not present")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := transcript.ParseDocument(context.Background(), append([]byte(nil), data...))
			if err != nil {
				t.Skipf("not a supported conversation document: %v", err)
			}
			out, err := doc.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			results := 0
			for range agentctx.ToolResults(doc.Messages) {
				results++
			}
			rep := agentctx.ValidatePairing(doc.Messages)
			t.Logf("%s: %d messages, %d tool results, %d skipped, %d merged records, pairing issues %d, reused call ids %d",
				doc.Format, len(doc.Messages), results, doc.Skipped, doc.Merged, len(rep.Issues), rep.ReusedCallIDs)
			if n := doc.Notice(); n != "" {
				t.Logf("notice: %s", n)
			}
			if len(doc.Messages) == 0 {
				t.Error("no messages read")
			}
			if want := compactLines(data, doc.Format == agentctx.FormatJSONL || doc.Format == transcript.FormatClaudeCode || doc.Format == transcript.FormatOpenHands); !bytes.Equal(out, want) {
				t.Errorf("round trip differs from the input (%d vs %d bytes)", len(out), len(want))
			}
			if doc.Format == transcript.FormatOpenHands {
				checkOpenHandsImport(t, doc, out)
				return
			}
			if doc.Format != transcript.FormatClaudeCode {
				return
			}
			again, err := transcript.ParseDocument(context.Background(), append([]byte(nil), out...))
			if err != nil {
				t.Fatal(err)
			}
			out2, _ := again.AppendJSON(nil)
			if !bytes.Equal(out, out2) || len(again.Messages) != len(doc.Messages) {
				t.Error("Claude Code rewrite is not stable")
			}
			if !rep.Valid {
				t.Errorf("pairing: %v", rep.Issues)
			}
			// Merging moves blocks between messages but never changes one:
			// the multiset of content blocks (and string contents) is the
			// same, byte for byte, in the input records (after the last
			// compact boundary, by default) and the output.
			sameBlocks(t, recordBlocks(t, data, true), recordBlocks(t, out, true))
			whole, err := transcript.ReadOptions{WholeHistory: true}.ParseDocument(context.Background(), append([]byte(nil), data...))
			if err != nil {
				t.Fatal(err)
			}
			wholeOut, _ := whole.AppendJSON(nil)
			sameBlocks(t, recordBlocks(t, data, false), recordBlocks(t, wholeOut, false))
			t.Logf("whole history: %d messages, %d boundaries; %s", len(whole.Messages), len(whole.Boundaries), whole.Notice())
		})
	}
}

func sameBlocks(t *testing.T, in, out []string) {
	t.Helper()
	if len(in) != len(out) {
		t.Fatalf("%d blocks in, %d out", len(in), len(out))
	}
	for k := range in {
		if in[k] != out[k] {
			t.Fatalf("block differs:\n in: %.300s\nout: %.300s", in[k], out[k])
		}
	}
	t.Logf("%d content blocks identical", len(in))
}

// recordBlocks returns the compacted content blocks of the user and
// assistant records of a Claude Code session, sorted; with live, only those
// after the last compact boundary.
func recordBlocks(t *testing.T, data []byte, live bool) []string {
	var out []string
	lines := bytes.Split(data, []byte("\n"))
	if live {
		for k := len(lines) - 1; k >= 0; k-- {
			if bytes.Contains(lines[k], []byte(`"subtype":"compact_boundary"`)) {
				lines = lines[k+1:]
				break
			}
		}
	}
	for _, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec struct {
			Type        string
			IsSidechain bool
			Message     struct{ Content json.RawMessage }
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if (rec.Type != "user" && rec.Type != "assistant") || rec.IsSidechain || rec.Message.Content == nil {
			continue
		}
		var blocks []json.RawMessage
		if json.Unmarshal(rec.Message.Content, &blocks) != nil {
			blocks = []json.RawMessage{rec.Message.Content}
		}
		for _, b := range blocks {
			out = append(out, string(rawjson.AppendCompact(nil, b)))
		}
	}
	slices.Sort(out)
	return out
}

// checkOpenHandsImport checks an imported OpenHands output: events cannot be
// written back, so the messages are written as JSON Lines, which read back
// as the same messages; every conversation pairs up once repaired (a run
// cut short leaves its last call unanswered).
func checkOpenHandsImport(t *testing.T, doc *agentctx.Document, out []byte) {
	t.Helper()
	again, err := transcript.ParseDocument(context.Background(), append([]byte(nil), out...))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := agentctx.MarshalMessages(doc.Messages)
	b, _ := agentctx.MarshalMessages(again.Messages)
	if again.Format != transcript.FormatOpenHands || !bytes.Equal(a, b) {
		t.Errorf("rewrite reads back as %s with different messages", again.Format)
	}
	total := 0
	for _, c := range doc.Conversations() {
		total += len(c.Messages)
		fixed, repairs := agentctx.RepairPairing(c.Messages)
		if rep := agentctx.ValidatePairing(fixed); !rep.Valid {
			t.Errorf("%s: unpaired after %d repairs: %v", c.Name, len(repairs), rep.Issues)
		}
		t.Logf("%s: %d messages, %d repairs", c.Name, len(c.Messages), len(repairs))
	}
	if total != len(doc.Messages) {
		t.Errorf("conversations hold %d messages, the document %d", total, len(doc.Messages))
	}
}
