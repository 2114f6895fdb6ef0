package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/transcript"
)

// prepRun runs one command line in-process; terminal says whether stderr
// is a terminal.
func prepRun(t *testing.T, terminal bool, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), args, cli.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb, ErrIsTerminal: terminal})
	return code, out.String(), errb.String()
}

type prepOutput struct {
	File         string             `json:"file"`
	Conversation string             `json:"conversation"`
	Output       string             `json:"output"`
	Messages     []agentctx.Message `json:"messages"`
	Report       pipeline.Report    `json:"report"`
}

// prepLines decodes the JSON lines of stdout and checks their keys.
func prepLines(t *testing.T, stdout string, keys ...string) []prepOutput {
	t.Helper()
	var outs []prepOutput
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not a JSON object: %v\n%.300s", err, sc.Text())
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("output has no %q: %.200s", k, sc.Text())
			}
		}
		var o prepOutput
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	if len(outs) == 0 {
		t.Fatalf("no output")
	}
	return outs
}

// prepDirs returns the flags that keep a run's files in a test directory.
func prepDirs(t *testing.T) (dir string, flags []string) {
	dir = t.TempDir()
	return dir, []string{"--workspace", filepath.Join(dir, "ws"), "--dir", filepath.Join(dir, "offload")}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestPrepareCommandFormats(t *testing.T) {
	tests := []struct {
		name, stdin   string
		conversations int
		reserved      bool
	}{
		{"json array", `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a b"}]}]`, 1, false},
		{"request body with system", readTestdata(t, "anthropic_request.json"), 1, true},
		{"openai chat", readTestdata(t, "openai_chat.json"), 1, false},
		{"json lines", readTestdata(t, "messages.jsonl"), 1, false},
		{"claude code", readTestdata(t, "claude_code.jsonl"), 1, false},
		{"mini-swe-agent", readTestdata(t, "swe_traj.json"), 1, false},
		{"empty list", `[]`, 1, false},
		{"openhands", readTestdata(t, "openhands_output.jsonl"), 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, flags := prepDirs(t)
			code, out, errOut := prepRun(t, false, tt.stdin, append([]string{"prepare"}, flags...)...)
			// Warnings (such as unknown block types, seed 002) may be logged.
			if code != 0 || strings.Contains(errOut, "agentctx:") {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			outs := prepLines(t, out, "messages", "report")
			if len(outs) != tt.conversations {
				t.Fatalf("%d outputs, want %d", len(outs), tt.conversations)
			}
			for _, o := range outs {
				r := o.Report
				if !r.Valid || !r.BelowThreshold || len(r.Steps) != 6 || r.MessagesAfter != len(o.Messages) {
					t.Errorf("report %+v", r)
				}
				if (r.ReservedTokens > 0) != tt.reserved {
					t.Errorf("reserved tokens %d", r.ReservedTokens)
				}
				if tt.conversations > 1 && o.Conversation == "" {
					t.Error("conversation not named")
				}
			}
		})
	}
}

func TestPrepareCommandSummary(t *testing.T) {
	in := `[{"role":"user","content":"hi"}]`
	tests := []struct {
		terminal bool
		flag     string
		shown    bool
	}{
		{true, "auto", true},
		{false, "auto", false},
		{false, "always", true},
		{true, "never", false},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			_, flags := prepDirs(t)
			code, out, errOut := prepRun(t, tt.terminal, in, append([]string{"prepare", "--summary", tt.flag}, flags...)...)
			if code != 0 || out == "" {
				t.Fatalf("exit %d", code)
			}
			shown := strings.Contains(errOut, "agentctx prepare: stdin") && strings.Contains(errOut, "tokens ")
			if shown != tt.shown {
				t.Errorf("summary shown %v, want %v:\n%s", shown, tt.shown, errOut)
			}
		})
	}
}

// TestPrepareCommandExampleSession is the README's first command:
// "agentctx prepare --limit 14000 examples/session.json".
func TestPrepareCommandExampleSession(t *testing.T) {
	dir, flags := prepDirs(t)
	session := filepath.Join("..", "..", "..", "examples", "session.json")
	before, _ := os.ReadFile(session)
	code, out, errOut := prepRun(t, true, "", append([]string{"prepare", "--limit", "14000", session}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := prepLines(t, out, "messages", "report")[0].Report
	if s := r.Step(pipeline.StepPrune); s.Changed == 0 {
		t.Error("nothing pruned")
	}
	if s := r.Step(pipeline.StepOffload); s.Changed != 1 || s.Offload.Stored != 45 {
		t.Errorf("offload: %+v", s.Offload)
	}
	c := r.Step(pipeline.StepCompact).Compact
	if !c.Compacted || !r.BelowThreshold || !r.Valid {
		t.Errorf("compact %+v, below %v, valid %v", c, r.BelowThreshold, r.Valid)
	}
	// The archive is an artifact of the session in the workspace.
	files := r.Step(pipeline.StepCompact).Files
	if !strings.HasPrefix(c.Archive, pipeline.ArchiveIDPrefix) || len(files) != 1 {
		t.Errorf("archive %s, files %v", c.Archive, files)
	} else if _, err := os.Stat(files[0]); err != nil || !strings.HasPrefix(files[0], filepath.Join(dir, "ws")) {
		t.Errorf("archive file %s: %v", files[0], err)
	}
	for _, want := range []string{"examples/session.json", "prune ", "offload ", "summarized", "originals in"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("summary lacks %q:\n%s", want, errOut)
		}
	}
	if after, _ := os.ReadFile(session); !bytes.Equal(before, after) {
		t.Error("the input file changed")
	}
}

func TestPrepareCommandUsageErrors(t *testing.T) {
	ok := `[{"role":"user","content":"hi"}]`
	// Two calls of one message share an id (an id reused in a later turn is repaired).
	dup := `[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}},{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"}]}]`
	tests := []struct {
		name, stdin string
		args        []string
		err         string
	}{
		{"limit", ok, []string{"--limit", "0"}, "--limit"},
		{"threshold", ok, []string{"--threshold", "-1"}, "--threshold"},
		{"offload mode", ok, []string{"--offload", "cloud"}, "--offload"},
		{"summary mode", ok, []string{"--summary", "loud"}, "--summary"},
		{"now", ok, []string{"--now", "yesterday"}, "--now"},
		{"encoding", ok, []string{"--encoding", "p50k"}, "encoding"},
		{"inline limit", ok, []string{"--inline-limit", "0"}, "--inline-limit"},
		{"min chars", ok, []string{"--min-chars", "0"}, "--min-chars"},
		{"keep recent", ok, []string{"--keep-recent", "-1"}, "--keep-recent"},
		{"session", ok, []string{"--session", ""}, "--session"},
		{"summarizer", ok, []string{"--summarizer", "gpt"}, "--summarizer"},
		{"model without summarizer", ok, []string{"--model", "x"}, "--model"},
		{"malformed", `[{"role":`, nil, "line 1"},
		{"unrepairable", dup, nil, "cannot be repaired"},
		{"missing file", "", []string{"no/such/file.json"}, "no such file"},
		{"two files without --out", ok, []string{"a.json", "b.json"}, "accepts at most 1 arg"},
		{"--out with stdin", ok, []string{"--out", "x", "-"}, "--out takes files"},
		{"--out without files", ok, []string{"--out", "x"}, "requires at least 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, flags := prepDirs(t)
			code, out, errOut := prepRun(t, true, tt.stdin, append(append([]string{"prepare"}, flags...), tt.args...)...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, tt.err) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stdout %.80q, stderr %q; want exit 2 and %q", code, out, errOut, tt.err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %d entries for bad usage", len(entries))
			}
		})
	}
}

// --out naming a file, or a path under one, is bad usage: exit 2 with
// one line, nothing written (issue 48: exit 1).
func TestPrepareOutNotADirectory(t *testing.T) {
	dir, flags := prepDirs(t)
	in := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(in, []byte(`[{"role":"user","content":"hi"}]`), 0o644)
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, out := range []string{file, filepath.Join(file, "sub")} {
		code, stdout, errOut := prepRun(t, true, "", append(append([]string{"prepare"}, flags...), "--out", out, in)...)
		if code != cli.ExitUsage || stdout != "" || !strings.Contains(errOut, "not a directory") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("--out %s: exit %d, stdout %.80q, stderr %q; want exit 2, not a directory", out, code, stdout, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("--out %s: wrote %d entries", out, len(entries))
		}
	}
}

func TestPrepareCommandOut(t *testing.T) {
	dir, flags := prepDirs(t)
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	files := map[string]string{
		"array.json":      `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`,
		"session.jsonl":   readTestdata(t, "claude_code.jsonl"),
		"openhands.jsonl": readTestdata(t, "openhands_output.jsonl"),
	}
	var args []string
	for _, name := range []string{"array.json", "openhands.jsonl", "session.jsonl"} {
		os.WriteFile(filepath.Join(in, name), []byte(files[name]), 0o644)
		args = append(args, filepath.Join(in, name))
	}
	outDir := filepath.Join(dir, "out")
	code, out, errOut := prepRun(t, true, "", append(append([]string{"prepare", "--out", outDir, "--summary", "never"}, flags...), args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	outs := prepLines(t, out, "file", "output", "report")
	if len(outs) != 4 { // the OpenHands file holds two conversations
		t.Errorf("%d report lines, want 4", len(outs))
	}
	if !strings.Contains(errOut, "\r") || !strings.Contains(errOut, "3/3") || !strings.Contains(errOut, "[###") {
		t.Errorf("no progress bar on the terminal: %q", errOut)
	}
	// Each file is written back in its shape, each conversation in its
	// place (the OpenHands file keeps its two records), every one paired
	// (the OpenHands run cut short gets its synthetic result as an event).
	for name, want := range map[string]agentctx.Format{"array.json": agentctx.FormatArray, "session.jsonl": transcript.FormatClaudeCode, "openhands.jsonl": transcript.FormatOpenHands} {
		doc, err := transcript.ReadFile(context.Background(), filepath.Join(outDir, name), nil)
		if err != nil || doc.Format != want {
			t.Errorf("%s: %v, format %v, want %s", name, err, doc.Format, want)
			continue
		}
		convs := doc.Conversations()
		if name == "openhands.jsonl" && (len(convs) != 2 || convs[0].Name != "calc__calc-1") {
			t.Errorf("%s: %d conversations written back, want 2", name, len(convs))
		}
		for _, c := range convs {
			if !agentctx.ValidatePairing(c.Messages).Valid {
				t.Errorf("%s %s: output unpaired", name, c.Name)
			}
		}
	}
	// Each conversation of a run over several files is a session of its
	// own: its artifacts carry its session id, in the one namespace.
	for _, session := range []string{"openhands/calc__calc-1", "session"} {
		code, out, errOut := prepRun(t, false, "", "ws", "ls", "--workspace", filepath.Join(dir, "ws"), "--session", session)
		if code != 0 || !strings.Contains(out, `"session_id":"`+session+`"`) {
			t.Errorf("artifacts of session %s: exit %d %.200s %s", session, code, out, errOut)
		}
	}

	// Two inputs with one name, or an output over its input: usage errors.
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "array.json"), []byte(files["array.json"]), 0o644)
	for _, bad := range [][]string{
		{"--out", filepath.Join(dir, "out2"), filepath.Join(in, "array.json"), filepath.Join(other, "array.json")},
		{"--out", in, filepath.Join(in, "array.json")},
	} {
		code, out, errOut := prepRun(t, false, "", append(append([]string{"prepare"}, flags...), bad...)...)
		if code != cli.ExitUsage || out != "" {
			t.Errorf("%q: exit %d, stderr %q", bad, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out2")); !errors.Is(err, os.ErrNotExist) {
		t.Error("output directory made for bad usage")
	}
}

func TestPrepareCommandFilesModeAndVerify(t *testing.T) {
	dir, flags := prepDirs(t)
	in := `[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + strings.Repeat("z", 150) + `"}]}]`
	code, out, errOut := prepRun(t, false, in, append([]string{"prepare", "--offload", "files", "--verify"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	o := prepLines(t, out, "messages", "report")[0]
	s := o.Report.Step(pipeline.StepOffload)
	if s.Offload.Mode != pipeline.OffloadFiles || s.Offload.Verified == nil || !s.Offload.Verified.OK() || s.Offload.Verified.Checked != 1 {
		t.Errorf("offload %+v", s.Offload)
	}
	if got := o.Messages[1].Content.Blocks()[0].Content.Text(); got != "[Content offloaded to: ./tool-result-t1.md]" {
		t.Errorf("reference %q", got)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "offload", "tool-result-t1.md")); err != nil || string(data) != strings.Repeat("z", 150) {
		t.Errorf("file: %v", err)
	}
}

func TestPrepareCommandSharedTranscripts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "shared", "transcripts", "*.json*"))
	if len(files) == 0 {
		t.Skip("shared transcripts not present")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, flags := prepDirs(t)
			code, out, errOut := prepRun(t, false, "", append([]string{"prepare", "--limit", "100000", f}, flags...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, o := range prepLines(t, out, "messages", "report") {
				if !o.Report.Valid || !o.Report.BelowThreshold {
					t.Errorf("%s: valid %v, below %v", o.Conversation, o.Report.Valid, o.Report.BelowThreshold)
				}
			}
		})
	}
}
