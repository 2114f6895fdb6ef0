package summaryeval_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/summaryeval"
	"github.com/agentctx/agentctx/transcript"
)

// history is a small session: requests, an edit of a file, a failed test
// run; its tail names the file and the function again.
func history(n int) string {
	var b strings.Builder
	b.WriteString(`[{"role":"user","content":"Fix parse_header in /repo/parse.go."}`)
	for i := range n {
		fmt.Fprintf(&b, `,{"role":"assistant","content":[{"type":"text","text":"Step %d."},{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"go test ./... # %d %s"}}]}`, i, i, i, strings.Repeat("x", 200))
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"ok %s"}]}`, i, strings.Repeat("y ", 100))
	}
	b.WriteString(`,{"role":"assistant","content":"parse_header in /repo/parse.go is fixed."}]`)
	return b.String()
}

func TestEvaluate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(history(40)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not read"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(0, 0)
	opts := summaryeval.Options{Limit: 4000, KeepSummaries: true, Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }}
	rows, err := summaryeval.Evaluate(context.Background(), []string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if r.File != "a.json" || r.Messages != 82 || r.MiddleMessages == 0 || r.TailMessages == 0 || r.MiddleMessages+r.TailMessages != 82 {
		t.Errorf("row %+v", r)
	}
	if r.Elapsed != time.Millisecond || !strings.HasPrefix(r.Summary, compact.SummaryTitle) {
		t.Errorf("elapsed %v summary %q", r.Elapsed, r.Summary)
	}
	if r.Score.Paths.Total != 1 || r.Score.Identifiers.Total != 1 || r.Score.Requests.Total != 1 || !r.Met(0) {
		t.Errorf("score %+v", r.Score)
	}
	var md strings.Builder
	if err := summaryeval.WriteMarkdown(&md, rows, 0); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| transcript |", "| a.json | 82 (", "| 100% (1/1) |", "| met |"} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, md.String())
		}
	}
	// A summary too large for its budget misses the targets.
	if r.Met(r.Score.Tokens - 1) {
		t.Error("Met ignores the budget")
	}
	// A failing summarizer is reported in the row.
	opts.Summarizer = compact.SummarizerFunc(func(context.Context, compact.Request) (string, error) { return "", errors.New("boom") })
	rows, err = summaryeval.Evaluate(context.Background(), []string{filepath.Join(dir, "a.json")}, opts)
	if err != nil || rows[0].Err != "boom" || rows[0].Met(0) {
		t.Errorf("failing summarizer: %+v, %v", rows, err)
	}
}

func TestEvaluateErrors(t *testing.T) {
	if _, err := summaryeval.Evaluate(context.Background(), []string{t.TempDir()}, summaryeval.Options{}); !errors.Is(err, summaryeval.ErrNoTranscripts) {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := summaryeval.Evaluate(context.Background(), []string{"/no/such/file.json"}, summaryeval.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o644)
	if _, err := summaryeval.Evaluate(context.Background(), []string{bad}, summaryeval.Options{}); err == nil {
		t.Error("no error for a file that is not a conversation")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	good := filepath.Join(t.TempDir(), "a.json")
	os.WriteFile(good, []byte(history(40)), 0o644)
	if _, err := summaryeval.Evaluate(ctx, []string{good}, summaryeval.Options{Limit: 4000}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestSharedTranscripts runs the evaluation on the shared transcripts and
// the example session and logs the table (go test -v); the targets
// themselves are checked by compact's TestTranscriptsSummaryTargets.
func TestSharedTranscripts(t *testing.T) {
	paths := []string{"../../../shared/transcripts", "../../examples/session.json"}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Skip("shared transcripts not present")
	}
	rows, err := summaryeval.Evaluate(context.Background(), paths, summaryeval.Options{Read: transcript.ReadOptions{WholeHistory: true}})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	summaryeval.WriteMarkdown(&md, rows, 0)
	t.Logf("\n%s", md.String())
	for _, r := range rows {
		if !r.Met(0) {
			t.Errorf("%s #%d misses a target: %+v", r.File, r.Conversation, r.Score)
		}
	}
}
