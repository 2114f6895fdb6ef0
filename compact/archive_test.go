package compact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

func TestWriteArchiveNaming(t *testing.T) {
	dir := t.TempDir()
	msgs := []agentctx.Message{user(2)}
	sess := filepath.Join(dir, "s1")
	if err := os.MkdirAll(sess, 0o755); err != nil {
		t.Fatal(err)
	}
	// Files already there: the highest seq wins, whatever its timestamp;
	// other names are ignored.
	for _, name := range []string{"compact-20250101T000000Z-7.json", "compact-20991231T235959Z-3.json", "compact-x-99.txt", "notes.json", "compact--12a.json"} {
		if err := os.WriteFile(filepath.Join(sess, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 22, 15, 14, 0, 999_000_000, time.FixedZone("CET", 3600))
	p, err := compact.WriteArchive(context.Background(), msgs, compact.ArchiveOptions{Dir: dir, SessionID: "s1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(sess, "compact-20261122T141400Z-8.json"); p != want {
		t.Errorf("path = %s, want %s (UTC, to the second, seq 8)", p, want)
	}
	if !filepath.IsAbs(p) {
		t.Error("path is not absolute")
	}
	if data, _ := os.ReadFile(filepath.Join(sess, "compact-20250101T000000Z-7.json")); string(data) != "old" {
		t.Error("an existing archive was changed")
	}

	// Defaults: .offload/default under the working directory.
	t.Chdir(t.TempDir())
	p, err = compact.WriteArchive(context.Background(), msgs, compact.ArchiveOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, ".offload", "default", "compact-20261122T141400Z-1.json"); p != want {
		t.Errorf("default path = %s, want %s", p, want)
	}
}

func TestWriteArchiveContentIsLossless(t *testing.T) {
	raw := `[{"role":"assistant","content":[{"type":"tool_use","id":"t<1>","name":"Read","input":{"b":1,"a":"&"},"cache_control":{"type":"ephemeral"}}],"timestamp":1700000000000,"extra":{"k":[1,2]}},{"role":"user","content":"ünïcødé \u2028 <html>"}]`
	msgs := parse(t, raw)
	p, err := compact.WriteArchive(context.Background(), msgs, compact.ArchiveOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\n    \"role\": \"assistant\",\n") || !strings.HasSuffix(string(data), "]\n") {
		t.Errorf("archive is not indented JSON:\n%s", data)
	}
	if strings.Contains(string(data), `\u003c`) || strings.Contains(string(data), `\u0026`) {
		t.Errorf("archive HTML-escapes strings:\n%s", data)
	}
	back := parse(t, string(data))
	if mustJSON(t, back) != mustJSON(t, msgs) {
		t.Errorf("archive does not round-trip:\n%s\nvs\n%s", mustJSON(t, back), mustJSON(t, msgs))
	}
	var generic []map[string]any
	if err := json.Unmarshal(data, &generic); err != nil || len(generic) != 2 {
		t.Errorf("archive is not a JSON array of 2 messages: %v", err)
	}
}

// Concurrent compactions never take the same sequence number, even when
// their timestamps differ (so their file names could not collide).
func TestWriteArchiveConcurrent(t *testing.T) {
	dir := t.TempDir()
	const n = 24
	var wg sync.WaitGroup
	paths := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			at := time.Date(2026, 11, 22, 7, 14, i, 0, time.UTC)
			paths[i], errs[i] = compact.WriteArchive(context.Background(), []agentctx.Message{user(i + 1)},
				compact.ArchiveOptions{Dir: dir, SessionID: "s", Now: func() time.Time { return at }})
		})
	}
	wg.Wait()
	seen := map[int]string{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		seq, ok := compact.ArchiveSeq(filepath.Base(paths[i]))
		if !ok {
			t.Fatalf("bad name %s", paths[i])
		}
		if other, dup := seen[seq]; dup {
			t.Errorf("seq %d taken twice: %s and %s", seq, other, paths[i])
		}
		seen[seq] = paths[i]
	}
	for s := 1; s <= n; s++ {
		if _, ok := seen[s]; !ok {
			t.Errorf("seq %d missing: the numbers should be 1..%d", s, n)
		}
	}
}

func TestArchiveSeq(t *testing.T) {
	tests := []struct {
		name string
		seq  int
		ok   bool
	}{
		{"compact-20261122T071400Z-1.json", 1, true},
		{"compact-20261122T071400Z-123.json", 123, true},
		{".compact-5.seq", 5, true},
		{"compact-20261122T071400Z-0.json", 0, false},
		{"compact-20261122T071400Z--1.json", 0, false},
		{"compact-20261122T071400Z-+1.json", 0, false},
		{"compact-20261122T071400Z-1.json.tmp", 0, false},
		{"compact-1.json", 0, false},
		{"compact-20261122T071400Z-x.json", 0, false},
		{"tool-result-1.md", 0, false},
		{".compact-.seq", 0, false},
	}
	for _, tc := range tests {
		seq, ok := compact.ArchiveSeq(tc.name)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("ArchiveSeq(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

func TestWriteArchiveErrors(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := compact.WriteArchive(context.Background(), []agentctx.Message{user(1)}, compact.ArchiveOptions{Dir: blocker})
	var ae *compact.ArchiveError
	if err == nil || !strings.Contains(err.Error(), blocker) || !errorsAs(err, &ae) || ae.Op != "mkdir" {
		t.Errorf("error = %v, want an *ArchiveError for mkdir naming the path", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := compact.WriteArchive(ctx, []agentctx.Message{user(1)}, compact.ArchiveOptions{Dir: t.TempDir()}); err == nil {
		t.Error("no error from a cancelled context")
	}
}

// TestFileArchiverArchivesOnce: the same messages archived again (a
// compaction retried after its summary failed, a command run again) reuse
// the archive that holds them; other messages get a new one.
func TestFileArchiverArchivesOnce(t *testing.T) {
	dir := t.TempDir()
	a := compact.FileArchiver{Dir: dir, Now: func() time.Time { return time.Date(2026, 11, 22, 7, 14, 0, 0, time.UTC) }}
	msgs := []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("hello"))}
	first, err := a.Archive(context.Background(), "s", msgs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Archive(context.Background(), "s", msgs)
	if err != nil || again != first {
		t.Fatalf("again: %+v, %v; want %+v", again, err, first)
	}
	other, err := a.Archive(context.Background(), "s", append(msgs, agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text("hi"))))
	if err != nil || other.Path == first.Path {
		t.Fatalf("other messages: %+v, %v", other, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "s", compact.ArchivePrefix+"*"))
	if len(files) != 2 {
		t.Errorf("%d archives, want 2: %v", len(files), files)
	}
}

// TestCompactHandsOnFacts gives Compact the facts of the middle
// (Options.Facts): the summarizer gets them in its Request, and the
// archive is indented from their encodings, the same bytes as encoding
// each message; an encoding they hold is what is archived (so a caller's
// facts must be the messages').
func TestCompactHandsOnFacts(t *testing.T) {
	msgs := []agentctx.Message{sys(10), user(40), asst(40), user(40), asst(40), user(5), asst(10)}
	run := func(facts func([]agentctx.Message, int, int) []agentctx.Facts) (*fakeSummarizer, []byte) {
		t.Helper()
		o := baseOpts(t)
		o.Limit, o.Threshold, o.TailRatio = 200, 0.9, 0.05
		s := &fakeSummarizer{}
		o.Summarizer, o.Facts = s, facts
		res, err := compact.Compact(context.Background(), msgs, o)
		if err != nil || !res.Compacted || res.Archive == "" {
			t.Fatalf("not compacted and archived: %v %+v", err, res)
		}
		data, err := os.ReadFile(res.Archive)
		if err != nil {
			t.Fatal(err)
		}
		return s, data
	}
	conv, err := agentctx.NewConversation(msgs)
	if err != nil {
		t.Fatal(err)
	}
	_, want := run(nil)
	var h, tl int
	s, got := run(func(view []agentctx.Message, from, to int) []agentctx.Facts {
		h, tl = from, to
		return conv.Facts[from:to]
	})
	if string(got) != string(want) {
		t.Fatalf("the archive from the encodings differs:\n%s\nvs\n%s", got, want)
	}
	if len(s.reqs) != 1 || len(s.reqs[0].Facts) != tl-h || len(s.reqs[0].Facts) != len(s.reqs[0].Messages) || &s.reqs[0].Facts[0] != &conv.Facts[h] {
		t.Fatalf("the summarizer was not handed the facts of its messages: %d facts, %d messages", len(s.reqs[0].Facts), len(s.reqs[0].Messages))
	}
	// Facts of another length are not known facts: not handed on.
	s, got = run(func(view []agentctx.Message, from, to int) []agentctx.Facts { return conv.Facts[from : to-1] })
	if string(got) != string(want) || s.reqs[0].Facts != nil {
		t.Fatal("facts of another length were used")
	}
	// The encodings are what is archived.
	wrong := append([]agentctx.Facts(nil), conv.Facts...)
	_, got = run(func(view []agentctx.Message, from, to int) []agentctx.Facts {
		wrong[from].Encoding = []byte(`{"role":"user","content":"from the facts"}`)
		return wrong[from:to]
	})
	if !strings.Contains(string(got), `"from the facts"`) {
		t.Fatal("the archive was not written from the encodings")
	}
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWriteArchiveIsEncodeArchive: the archive written a message at a
// time is EncodeArchiveConversation's bytes, with the facts' encodings or
// without, for no message, one, and many; a failed write stops it with
// the writer's error.
func TestWriteArchiveIsEncodeArchive(t *testing.T) {
	many := make([]agentctx.Message, 0, 60)
	for i := range 30 {
		many = append(many, agentctx.NewMessage(agentctx.RoleAssistant, agentctx.BlockList(
			agentctx.TextBlock(fmt.Sprintf("step %d: \"quoted\" \\ {[,:]}", i)),
			agentctx.ToolUseBlock(fmt.Sprint("t", i), "Bash", json.RawMessage(fmt.Sprintf(`{"command":"ls %d","n":[1,{"a":null}]}`, i))))),
			agentctx.NewMessage(agentctx.RoleUser, agentctx.BlockList(agentctx.ToolResultBlock(fmt.Sprint("t", i), agentctx.Text(strings.Repeat("out\n", i)), i%7 == 0))))
	}
	for _, msgs := range [][]agentctx.Message{nil, many[:1], many} {
		facts := make([]agentctx.Facts, len(msgs))
		for i, m := range msgs {
			if i%2 == 0 { // some known, some not
				enc, err := m.AppendJSON(nil)
				if err != nil {
					t.Fatal(err)
				}
				facts[i].Encoding = enc
			}
		}
		for _, conv := range []agentctx.Conversation{{Messages: msgs}, {Messages: msgs, Facts: facts}} {
			want, err := compact.EncodeArchiveConversation(conv)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := compact.WriteArchiveConversation(&got, conv); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Fatalf("%d messages: written\n%s\nencoded\n%s", len(msgs), got.String(), want)
			}
		}
	}
	if err := compact.WriteArchiveConversation(&failingWriter{n: 100}, agentctx.Conversation{Messages: many}); err == nil || err.Error() != "disk full" {
		t.Errorf("a failed write: %v", err)
	}
}
