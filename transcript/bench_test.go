package transcript_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkParseDocument measures reading the largest shared transcript (a
// Claude Code session, its live context), or the Claude Code fixture when
// the shared folder is absent.
func BenchmarkParseDocument(b *testing.B) {
	benchParse(b, transcript.ReadOptions{})
}

// BenchmarkParseDocumentWholeHistory reads the same session whole.
func BenchmarkParseDocumentWholeHistory(b *testing.B) {
	benchParse(b, transcript.ReadOptions{WholeHistory: true})
}

func benchParse(b *testing.B, opts transcript.ReadOptions) {
	path := filepath.Join(sharedTranscripts, "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		if data, err = os.ReadFile("../testdata/claude_code.jsonl"); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := opts.ParseDocument(context.Background(), data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeDocument measures writing it back.
func BenchmarkEncodeDocument(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(sharedTranscripts, "mini-swe-agent_pr854__astropy__astropy-12907.traj.json"))
	if err != nil {
		if data, err = os.ReadFile("../testdata/swe_traj.json"); err != nil {
			b.Fatal(err)
		}
	}
	doc, err := transcript.ParseDocument(context.Background(), data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		if buf, err = doc.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeClaudeCodeEdited measures writing a Claude Code session
// back after an edit: every tenth tool result replaced, so that each
// message is found in the file (unchanged ones as their records, changed
// ones in their first record).
func BenchmarkEncodeClaudeCodeEdited(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(sharedTranscripts, "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"))
	if err != nil {
		if data, err = os.ReadFile("../testdata/claude_code.jsonl"); err != nil {
			b.Fatal(err)
		}
	}
	doc, err := transcript.ReadOptions{WholeHistory: true}.ParseDocument(context.Background(), data)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	edited := doc.WithMessages(agentctx.MapToolResults(doc.Messages, func(agentctx.ToolResult) (agentctx.Content, bool) {
		n++
		return agentctx.Text("[pruned]"), n%10 == 0
	}))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		if buf, err = edited.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
