package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/eval"
	"github.com/agentctx/agentctx/transcript"
)

// sharedTranscripts holds the project's development transcripts, outside
// the repository; tests that use it skip when it is absent.
const sharedTranscripts = "../../../shared/transcripts"

// now is the clock of the tests.
var now = time.Date(2026, 1, 31, 2, 0, 0, 0, time.UTC)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEvaluate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.json", `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}]`)
	write("b.jsonl", `{"role":"user","content":"hi"}`+"\n"+`{"role":"assistant","content":"hello"}`+"\n")
	write("broken.json", `[{"role":`)
	write("notes.md", "# not a transcript\n")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	write("sub/nested.json", `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`)
	os.Mkdir(filepath.Join(dir, ".hidden"), 0o755)
	write(".hidden/ignored.json", `[]`)
	copyFile(t, "../../testdata/claude_code.jsonl", filepath.Join(dir, "claude.jsonl"))
	copyFile(t, "../../testdata/openhands_output.jsonl", filepath.Join(dir, "openhands.jsonl"))
	copyFile(t, "../../testdata/anthropic_request.json", filepath.Join(dir, "request.json"))
	copyFile(t, "../../testdata/swe_agent.traj", filepath.Join(dir, "swe.traj"))
	write("empty.json", `[]`)

	work := t.TempDir()
	var progress []string
	ev, err := eval.Run(context.Background(), dir, eval.Options{
		Options:  pipeline.Options{Now: func() time.Time { return now }},
		WorkDir:  work,
		Progress: func(done, total int, file string) { progress = append(progress, file) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range ev.Rows {
		names = append(names, strings.TrimSuffix(r.File+"#"+r.Conversation, "#"))
	}
	want := "a.json,b.jsonl,broken.json,claude.jsonl,empty.json,openhands.jsonl#calc__calc-1,openhands.jsonl#calc__calc-2,request.json,sub/nested.json,swe.traj"
	if strings.Join(names, ",") != want {
		t.Fatalf("rows %s\nwant %s", strings.Join(names, ","), want)
	}
	if ev.Files != 9 || ev.Conversations != 10 || ev.Passed != 8 || ev.OK() {
		t.Errorf("files %d, conversations %d, passed %d, ok %v", ev.Files, ev.Conversations, ev.Passed, ev.OK())
	}
	if len(progress) != 10 || progress[9] != "" {
		t.Errorf("progress calls %q", progress)
	}
	// Every entry not read is listed with its reason.
	var skipped []string
	for _, f := range ev.Skipped {
		skipped = append(skipped, f.File+": "+f.Reason)
	}
	if got := strings.Join(skipped, "; "); got != ".hidden/: a hidden directory: not entered; notes.md: not a transcript name: .json, .jsonl, .traj" {
		t.Errorf("skipped: %s", got)
	}
	for _, r := range ev.Rows {
		switch r.File {
		case "broken.json":
			if r.Error == "" || r.OK() {
				t.Errorf("broken.json: %+v", r)
			}
			continue
		case "empty.json":
			// A conversation with no message meets no target, and says so.
			if r.OK() || r.Notice != "no messages (json)" {
				t.Errorf("empty.json: ok %v, notice %q", r.OK(), r.Notice)
			}
			continue
		case "claude.jsonl":
			if !strings.Contains(r.Notice, "records skipped: progress 2") {
				t.Errorf("claude.jsonl notice %q", r.Notice)
			}
		case "swe.traj":
			if r.Format != transcript.FormatSWEAgent || r.Messages != 8 {
				t.Errorf("swe.traj: %s with %d messages", r.Format, r.Messages)
			}
		}
		if !r.OK() || r.Checked != r.Stored || r.Format == "" {
			t.Errorf("%s %s: %+v", r.File, r.Conversation, r)
		}
	}
	oh := ev.Rows[5]
	if oh.Format != transcript.FormatOpenHands || oh.InputValid || oh.Repairs != 1 || !oh.Valid {
		t.Errorf("openhands row: %+v", oh)
	}
	// Each conversation got a workspace of its own.
	if _, err := os.Stat(filepath.Join(work, "openhands.jsonl", "calc__calc-1", "workspace")); err != nil {
		t.Error(err)
	}

	var md bytes.Buffer
	if err := ev.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| transcript | format |", "| a.json | json | 3 → 3 |", "↳ error: line 1", "| ↳ no messages (json) |", "10 conversation(s), 8 met every target", "- notes.md: not a transcript name"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
	data, err := json.Marshal(ev)
	if err != nil || !bytes.Contains(data, []byte(`"prepare_ms":`)) || !bytes.Contains(data, []byte(`"ok":false`)) {
		t.Errorf("JSON: %v %.300s", err, data)
	}
}

func TestEvaluateExampleSession(t *testing.T) {
	// The README's first command: the example session prepared with a
	// 14,000-token window prunes, offloads and compacts.
	dir := t.TempDir()
	copyFile(t, "../../examples/session.json", filepath.Join(dir, "session.json"))
	ev, err := eval.Run(context.Background(), dir, eval.Options{
		Options: pipeline.Options{Compact: compact.Options{Limit: 14_000}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := ev.Rows[0]
	if !r.OK() || r.Pruned == 0 || r.Replaced != 1 || r.Compacted == 0 || r.ArchivedBytes == 0 || r.Checked != r.Stored+1 {
		t.Errorf("example session: %+v", r)
	}
	t.Logf("%d → %d tokens, %d → %d messages, pruned %d, replaced %d, compacted %d", r.TokensBefore, r.TokensAfter, r.Messages, r.MessagesAfter, r.Pruned, r.Replaced, r.Compacted)
}

func TestEvaluateSharedTranscripts(t *testing.T) {
	if _, err := os.Stat(sharedTranscripts); err != nil {
		t.Skip("shared transcripts not present")
	}
	ev, err := eval.Run(context.Background(), sharedTranscripts, eval.Options{
		Options: pipeline.Options{Compact: compact.Options{Limit: 100_000}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	ev.WriteMarkdown(&md)
	t.Logf("\n%s", md.String())
	if len(ev.Rows) == 0 || !ev.OK() {
		t.Errorf("targets missed: %d of %d rows passed", ev.Passed, len(ev.Rows))
	}
}

func TestEvaluateErrors(t *testing.T) {
	if _, err := eval.Run(context.Background(), filepath.Join(t.TempDir(), "missing"), eval.Options{}); err == nil {
		t.Error("missing directory: no error")
	}
	if _, err := eval.Run(context.Background(), t.TempDir(), eval.Options{Options: pipeline.Options{Offload: "x"}}); err == nil {
		t.Error("invalid options: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`[]`), 0o644)
	if _, err := eval.Run(ctx, dir, eval.Options{}); err == nil {
		t.Error("cancelled: no error")
	}
	// A tree without a transcript (a folder of empty folders) is an
	// error, not an empty evaluation.
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(empty, "a", "notes.md"), []byte("x"), 0o644)
	if ev, err := eval.Run(context.Background(), empty, eval.Options{}); !errors.Is(err, eval.ErrNoTranscripts) {
		t.Errorf("no transcripts: %v, %+v", err, ev)
	}
}
