package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/app/cli"
)

// runStreams runs one command line in-process with the given streams
// (stdin, stdout and stderr are filled in when nil) and returns the exit
// code, stdout and stderr.
func runStreams(t *testing.T, ctx context.Context, s cli.Streams, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if s.In == nil {
		s.In = strings.NewReader("")
	}
	s.Out, s.Err = &out, &errb
	code := cli.Run(ctx, args, s)
	return code, out.String(), errb.String()
}

// oneLineError checks the shape of a usage error: exit 2, nothing on
// stdout, one line on stderr that contains want.
func oneLineError(t *testing.T, code int, out, errs, want string) {
	t.Helper()
	if code != cli.ExitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "agentctx: ") || strings.HasPrefix(errs, "agentctx: agentctx: ") || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stdout %.100q, stderr %q; want exit 2, one line with %q", code, out, errs, want)
	}
}

func TestDirectoryAsFile(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"count", dir}, {"validate", dir}, {"prune", dir}, {"compact", dir}, {"offload", "--dir", filepath.Join(dir, "o"), dir},
		{"offload-one", "--session", "s", dir}, {"prepare", "--workspace", filepath.Join(dir, "ws"), dir},
		{"ws", "offload", "--workspace", filepath.Join(dir, "ws"), dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, out, errs := runCLI(t, "", args...)
			oneLineError(t, code, out, errs, "is a directory")
		})
	}
}

func TestBadFlagsOneLine(t *testing.T) {
	msgs := `[{"role":"user","content":"hi"}]`
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"prepare", "--threshold", "2"}, "--threshold 2"},
		{[]string{"prepare", "--threshold", "0"}, "--threshold 0"},
		{[]string{"prepare", "--threshold", "NaN"}, "--threshold NaN"},
		{[]string{"prepare", "--tail-ratio", "1"}, "--tail-ratio 1"},
		{[]string{"prepare", "--tail-ratio", "-0.1"}, "--tail-ratio -0.1"},
		{[]string{"prepare", "--no-compact", "--force"}, "--no-compact and --force"},
		{[]string{"prepare", "--no-compact", "--summarizer", "openai"}, "--no-compact and --summarizer"},
		{[]string{"prepare", "--no-prune", "--max-age", "1m"}, "--no-prune and --max-age"},
		{[]string{"prepare", "--offload", "none", "--inline-limit", "5"}, "--inline-limit goes with --offload workspace"},
		{[]string{"prepare", "--offload", "files", "--task", "t"}, "--task goes with --offload workspace"},
		{[]string{"prepare", "--min-chars", "5"}, "--min-chars goes with --offload files"},
		{[]string{"prepare", "--json"}, "--json goes with --out"},
		{[]string{"prepare", "--out", "x", "--messages-only", "f"}, "--messages-only and --out"},
		{[]string{"eval", "--threshold", "1.5", "."}, "--threshold 1.5"},
		{[]string{"compact", "--threshold", "2"}, "--threshold 2"},
		{[]string{"compact", "--tail-ratio", "1"}, "--tail-ratio 1"},
		{[]string{"compact", "--check", "--force"}, "--check and --force"},
		{[]string{"compact", "--check", "--summarizer", "openai"}, "--check and --summarizer"},
		{[]string{"compact", "--no-archive", "--dir", "x"}, "--no-archive and --dir"},
		{[]string{"validate", "--messages-only"}, "--messages-only goes with --repair"},
		{[]string{"completion", "tcsh"}, "invalid argument"},
		{[]string{"completion"}, "accepts 1 arg"},
		{[]string{"replay"}, "no model request in the transcript"}, // a library error that names the library: one prefix
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := runCLI(t, msgs, tt.args...)
			oneLineError(t, code, out, errs, tt.want)
		})
	}
	// The edges of the ranges are accepted.
	for _, args := range [][]string{
		{"compact", "--check", "--threshold", "1"},
		{"compact", "--check", "--tail-ratio", "0"},
		{"compact", "--check", "--tail-ratio", "0.99"},
	} {
		if code, _, errs := runCLI(t, msgs, args...); code != 0 {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

// requestBody is an Anthropic request whose members besides "messages"
// must survive every command that prints messages.
const requestBody = `{"model":"claude-x","max_tokens":1024,"system":"Be brief.","tools":[{"name":"Bash","input_schema":{"type":"object"}}],` +
	`"messages":[{"role":"user","content":"Run ls.","timestamp":1700000000000},` +
	`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"timestamp":1700000001000},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt\nb.txt"}],"timestamp":1700000002000,"messageStatus":"success"},` +
	`{"role":"assistant","content":"Two files.","timestamp":1700000003000}],"stream":false}`

func TestStdoutKeepsTheRequestBody(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	commands := map[string][]string{
		"prepare":         {"prepare", "--workspace", ws, "--dir", filepath.Join(dir, "p")},
		"prune":           {"prune"},
		"compact":         {"compact", "--force", "--limit", "100", "--dir", filepath.Join(dir, "c")},
		"offload":         {"offload", "--dir", filepath.Join(dir, "o"), "--min-chars", "5"},
		"ws offload":      {"ws", "offload", "--workspace", ws},
		"validate repair": {"validate", "--repair"},
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(t, requestBody, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			m := map[string]json.RawMessage{}
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
			}
			for k, want := range map[string]string{"model": `"claude-x"`, "max_tokens": "1024", "system": `"Be brief."`, "stream": "false"} {
				if string(m[k]) != want {
					t.Errorf("%s = %s, want %s", k, m[k], want)
				}
			}
			if _, ok := m["tools"]; !ok {
				t.Error("tools dropped")
			}
			// The request's members come first, in the input's order.
			if !strings.HasPrefix(out, `{"model":"claude-x","max_tokens":1024,"system":"Be brief.","tools":`) {
				t.Errorf("stdout does not start with the request body: %.120s", out)
			}

			code, out, _ = runCLI(t, requestBody, append(args, "--messages-only")...)
			m = map[string]json.RawMessage{}
			if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
				t.Fatalf("--messages-only: exit %d, %s", code, out)
			}
			for _, k := range []string{"model", "system", "tools", "max_tokens"} {
				if _, ok := m[k]; ok {
					t.Errorf("--messages-only kept %q", k)
				}
			}
			if _, ok := m["messages"]; !ok {
				t.Error("--messages-only has no messages")
			}
		})
	}
}

func TestPrepareStripsMetadata(t *testing.T) {
	dir := t.TempDir()
	args := []string{"prepare", "--workspace", filepath.Join(dir, "ws"), "--dir", filepath.Join(dir, "d"), "--now", "1700000004000"}
	_, out, _ := runCLI(t, requestBody, args...)
	if strings.Contains(out, `"timestamp"`) || strings.Contains(out, `"messageStatus"`) {
		t.Errorf("prepare sends metadata: %.300s", out)
	}
	_, out, _ = runCLI(t, requestBody, append(args, "--keep-metadata")...)
	if strings.Count(out, `"timestamp":`) != 4 || !strings.Contains(out, `"messageStatus":"success"`) {
		t.Errorf("--keep-metadata lost metadata: %.300s", out)
	}
	// The single-shot prune keeps everything but the content.
	_, out, _ = runCLI(t, requestBody, "prune")
	if strings.Count(out, `"timestamp":`) != 4 {
		t.Errorf("prune dropped timestamps: %.300s", out)
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"count"}, {"validate"}, {"prune"}, {"compact"}} {
		code, out, errs := runStreams(t, ctx, cli.Streams{In: strings.NewReader(requestBody)}, args...)
		if code != cli.ExitInterrupted || out != "" || errs != "agentctx: interrupted\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 130, nothing, one line", args, code, out, errs)
		}
	}
}

// TestInterruptWhileWaitingOnStdin cancels a command that waits on a
// stdin that never ends (a terminal): it returns 130 and prints the hint
// once and the interrupt once.
func TestInterruptWhileWaitingOnStdin(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	var out bytes.Buffer
	go func() {
		done <- cli.Run(ctx, []string{"count"}, cli.Streams{In: pr, Out: &out, Err: errW, InIsTerminal: true})
		errW.Close()
	}()
	buf := make([]byte, 4096)
	n, _ := errR.Read(buf) // the hint: the command is waiting
	if hint := string(buf[:n]); !strings.Contains(hint, "reading a conversation from stdin") || !strings.Contains(hint, "Ctrl-D") {
		t.Errorf("hint = %q", hint)
	}
	cancel()
	rest, _ := io.ReadAll(errR)
	select {
	case code := <-done:
		if code != cli.ExitInterrupted || out.Len() != 0 || string(rest) != "agentctx: interrupted\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), rest)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the context was cancelled")
	}
}

func TestStdinHintOnlyOnATerminal(t *testing.T) {
	msgs := `[{"role":"user","content":"hi"}]`
	_, out, errs := runStreams(t, t.Context(), cli.Streams{In: strings.NewReader(msgs), InIsTerminal: true}, "count")
	if !strings.Contains(errs, "Ctrl-D") || strings.Count(errs, "\n") != 1 || !strings.Contains(out, `"tokens"`) {
		t.Errorf("terminal: stdout %q, stderr %q", out, errs)
	}
	_, _, errs = runStreams(t, t.Context(), cli.Streams{In: strings.NewReader(msgs)}, "count")
	if errs != "" {
		t.Errorf("pipe: stderr %q", errs)
	}
	file := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(file, []byte(msgs), 0o644)
	_, _, errs = runStreams(t, t.Context(), cli.Streams{InIsTerminal: true}, "count", file)
	if errs != "" {
		t.Errorf("file on a terminal: stderr %q", errs)
	}
}

func TestLogsOnlyWithVerbose(t *testing.T) {
	// prune logs at info level that results without a timestamp were kept;
	// compact logs the failed archive.
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	in := compactHistory()
	_, _, errs := runCLI(t, in, "compact", "--force", "--limit", "1000", "--dir", blocker)
	if strings.Count(errs, "\n") != 1 || strings.Contains(errs, "level=") {
		t.Errorf("without -v: stderr %q, want one warning line and no log", errs)
	}
	_, _, errs = runCLI(t, in, "compact", "-v", "--force", "--limit", "1000", "--dir", blocker)
	if !strings.Contains(errs, "level=") {
		t.Errorf("with -v: stderr %q, want logs", errs)
	}
	// An error is printed once.
	_, _, errs = runCLI(t, in, "compact", "--strict", "--force", "--limit", "1000", "--dir", blocker)
	if strings.Count(errs, "\n") != 1 {
		t.Errorf("strict: stderr %q, want one line", errs)
	}
}

func TestPrepareOutJSONOnATerminal(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.json")
	os.WriteFile(in, []byte(requestBody), 0o644)
	args := []string{"prepare", "--workspace", filepath.Join(dir, "ws"), "--dir", filepath.Join(dir, "d"), "--out", filepath.Join(dir, "out"), in}
	for _, tt := range []struct {
		name     string
		terminal bool
		extra    []string
		json     bool
	}{
		{"redirected", false, nil, true},
		{"terminal", true, nil, false},
		{"terminal --json", true, []string{"--json"}, true},
	} {
		code, out, errs := runStreams(t, t.Context(), cli.Streams{OutIsTerminal: tt.terminal, ErrIsTerminal: tt.terminal}, append(args, tt.extra...)...)
		if code != 0 || (out != "") != tt.json {
			t.Errorf("%s: exit %d, stdout %.100q (stderr %q)", tt.name, code, out, errs)
		}
		if tt.terminal && !strings.Contains(errs, "→") {
			t.Errorf("%s: no summary on the terminal: %q", tt.name, errs)
		}
	}
	// The file written is the whole request, ready to send.
	b, err := os.ReadFile(filepath.Join(dir, "out", "a.json"))
	if err != nil || !strings.HasPrefix(string(b), `{"model":"claude-x"`) || strings.Contains(string(b), `"timestamp"`) {
		t.Errorf("output file: %v %.200s", err, b)
	}
}

func TestEnvironmentDefaults(t *testing.T) {
	in := compactHistory()
	env := map[string]string{"AGENTCTX_LIMIT": "1000", "AGENTCTX_SESSION": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	run := func(args ...string) (int, string, string) {
		return runStreams(t, t.Context(), cli.Streams{In: strings.NewReader(in), LookupEnv: lookup}, args...)
	}
	_, out, _ := run("compact", "--check")
	if !strings.Contains(out, `"threshold_tokens":920`) {
		t.Errorf("AGENTCTX_LIMIT not applied: %s", out)
	}
	_, out, _ = run("compact", "--check", "--limit", "2000")
	if !strings.Contains(out, `"threshold_tokens":1840`) {
		t.Errorf("the flag does not win over the environment: %s", out)
	}
	env["AGENTCTX_LIMIT"] = "lots"
	code, out, errs := run("compact", "--check")
	oneLineError(t, code, out, errs, "AGENTCTX_LIMIT")
	delete(env, "AGENTCTX_LIMIT")

	// A session id in the environment is the session ws offload writes;
	// the reads find its artifacts with any session or none, and the
	// listings cover every session (--session filters, the environment
	// does not).
	ws := filepath.Join(t.TempDir(), "ws")
	if code, _, errs := run("ws", "offload", "--workspace", ws); code != 0 {
		t.Fatal(errs)
	}
	_, out, _ = runStreams(t, t.Context(), cli.Streams{LookupEnv: lookup}, "ws", "ls", "--workspace", ws)
	if !strings.Contains(out, `"session_id":"from-env"`) {
		t.Errorf("ws offload did not take AGENTCTX_SESSION: %.300s", out)
	}
	code, _, errs = runStreams(t, t.Context(), cli.Streams{LookupEnv: lookup}, "ws", "grep", "--workspace", ws, "tool_result_toolu_1", "error")
	if code != 0 {
		t.Errorf("ws grep ID with AGENTCTX_SESSION: exit %d, %s", code, errs)
	}
	env["AGENTCTX_SESSION"] = "other"
	_, out, _ = runStreams(t, t.Context(), cli.Streams{LookupEnv: lookup}, "ws", "ls", "--workspace", ws)
	if !strings.Contains(out, "tool_result_toolu_1") {
		t.Errorf("ws ls with AGENTCTX_SESSION=other does not list every session's artifacts: %.300s", out)
	}
	if code, _, errs = runStreams(t, t.Context(), cli.Streams{LookupEnv: lookup}, "ws", "get", "--workspace", ws, "tool_result_toolu_1"); code != 0 {
		t.Errorf("ws get with AGENTCTX_SESSION=other: exit %d, %s", code, errs)
	}

	// Help names the variables.
	_, out, _ = runCLI(t, "", "compact", "--help")
	if !strings.Contains(out, "$AGENTCTX_LIMIT") || !strings.Contains(out, "$AGENTCTX_SESSION") {
		t.Errorf("compact help does not name the variables:\n%s", out)
	}
	_, out, _ = runCLI(t, "", "--help")
	for _, v := range []string{"AGENTCTX_WORKSPACE", "AGENTCTX_LIMIT", "AGENTCTX_NAMESPACE", "AGENTCTX_SESSION", "AGENTCTX_DIR"} {
		if !strings.Contains(out, v) {
			t.Errorf("root help does not list %s", v)
		}
	}
}

func TestVersionFlagAndCompletion(t *testing.T) {
	code, out, _ := runCLI(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "agentctx ") || strings.Count(out, "\n") != 1 {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	for shell, want := range map[string]string{"bash": "complete -o", "zsh": "#compdef agentctx", "fish": "complete -c agentctx"} {
		code, out, errs := runCLI(t, "", "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, %.200s %s", shell, code, out, errs)
		}
	}
	// The scripts call back __complete, which must list the commands.
	_, out, _ = runCLI(t, "", "__complete", "pre")
	if !strings.Contains(out, "prepare") || !strings.Contains(out, "prune") {
		t.Errorf("__complete pre: %q", out)
	}
}

// TestHelpInTheUsersWords checks every command's help: no references to
// internal documents, an example, and the root lists every input format.
func TestHelpInTheUsersWords(t *testing.T) {
	_, root, _ := runCLI(t, "", "--help")
	for _, f := range []string{"JSON array", "request body", ".traj.json", "JSON Lines", "Claude Code", "OpenHands"} {
		if !strings.Contains(root, f) {
			t.Errorf("root help does not name the input format %q", f)
		}
	}
	var paths [][]string
	for _, line := range strings.Split(root, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(line, "  ") && !strings.HasPrefix(f[0], "-") && !strings.HasPrefix(f[0], "AGENTCTX") && !strings.Contains(f[0], "agentctx") {
			paths = append(paths, []string{f[0]})
		}
	}
	paths = append(paths, []string{"ws", "offload"}, []string{"ws", "get"}, []string{"ws", "lines"}, []string{"ws", "grep"}, []string{"ws", "ls"})
	seen := 0
	for _, p := range paths {
		if p[0] == "help" || p[0] == "-" || strings.HasPrefix(p[0], "a JSON") {
			continue
		}
		code, out, _ := runCLI(t, "", append(p, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			continue // a word of the root text, not a command
		}
		seen++
		for _, bad := range []string{"SPEC", "§", "seed "} {
			if strings.Contains(out, bad) {
				t.Errorf("%v help mentions %q", p, bad)
			}
		}
		if !strings.Contains(out, "Examples:") {
			t.Errorf("%v help has no example", p)
		}
	}
	if seen < 15 {
		t.Errorf("checked the help of %d commands, want every one (15 or more)", seen)
	}
}

// TestStoredArtifactsReadBack stores tool results whose ids are device
// names on Windows or hold a NUL byte, and reads each back with the CLI.
func TestStoredArtifactsReadBack(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	ids := []string{"CON", "nul", "COM1.txt", "a\x00b", "../x", "lpt9."}
	var msgs []map[string]any
	for i, id := range ids {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "result " + string(rune('A'+i))}}},
		)
	}
	in, _ := json.Marshal(msgs)
	if code, _, errs := runCLI(t, string(in), "ws", "offload", "--workspace", ws); code != 0 {
		t.Fatal(errs)
	}
	_, list, _ := runCLI(t, "", "ws", "ls", "--workspace", ws)
	for i, id := range ids {
		// The id as ws ls prints it, JSON escapes and all.
		quoted, _ := json.Marshal("tool_result_" + id)
		if !strings.Contains(list, string(quoted)) {
			t.Errorf("ws ls does not list %s", quoted)
		}
		arg := strings.Trim(string(quoted), `"`)
		code, out, errs := runCLI(t, "", "ws", "get", "--workspace", ws, arg)
		if want := "result " + string(rune('A'+i)); code != 0 || out != want {
			t.Errorf("ws get %s: exit %d, %q (%s); want %q", arg, code, out, errs, want)
		}
	}
	// No file of the store is named after a device.
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		base, _, _ := strings.Cut(strings.ToUpper(d.Name()), ".")
		switch base {
		case "CON", "NUL", "COM1", "LPT9":
			t.Errorf("file %s is named after a Windows device", p)
		}
		if strings.ContainsRune(d.Name(), 0) || strings.HasSuffix(d.Name(), ".") {
			t.Errorf("file name %q", d.Name())
		}
		return nil
	})
}

// TestStaleTempFilesRemoved leaves temp files as a killed run would, and
// checks that the next run removes the old ones and keeps recent ones (a
// write in progress in another process).
func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	ws, out, arch := filepath.Join(dir, "ws"), filepath.Join(dir, "out"), filepath.Join(dir, "arch")
	old := time.Now().Add(-2 * time.Hour)
	var stale, fresh []string
	for _, d := range []string{filepath.Join(ws, "default"), out, arch, filepath.Join(arch, "s1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		s, f := filepath.Join(d, ".tmp-1234567"), filepath.Join(d, ".tmp-7654321")
		os.WriteFile(s, []byte("half"), 0o644)
		os.WriteFile(f, []byte("half"), 0o644)
		os.Chtimes(s, old, old)
		stale, fresh = append(stale, s), append(fresh, f)
	}
	in := filepath.Join(dir, "a.json")
	os.WriteFile(in, []byte(requestBody), 0o644)
	if code, _, errs := runCLI(t, "", "prepare", "--workspace", ws, "--dir", arch, "--session", "s1", "--out", out, in); code != 0 {
		t.Fatal(errs)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("stale %s left", p)
		}
	}
	for _, p := range fresh {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("recent %s removed", p)
		}
	}
}
