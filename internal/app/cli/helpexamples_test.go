package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// serverExample reports whether an example starts a server or needs one
// (a model API on localhost): those are run by their own end-to-end tests
// (proxy, mcp, the summarizers against local fakes), not here.
func serverExample(line string) bool {
	for _, p := range []string{"agentctx proxy", "agentctx mcp", "agentctx completion", "agentctx claude", "agentctx codex", "agentctx gemini"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.Contains(line, "--base-url http://localhost") || strings.Contains(line, "--proxy http") ||
		strings.Contains(line, "claude mcp add")
}

// TestHelpExamples runs every example of every command's --help (the lines
// starting with "agentctx", in order, in one directory holding the files
// they name), then the command lines of the README's sh blocks, and checks that each exits 0 and that what it prints to a
// pipe into jq is JSON.
func TestHelpExamples(t *testing.T) {
	readmeLines := readmeCommandLines(t)
	dir := t.TempDir()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	session := bytes.ReplaceAll(read("testdata/claude_code.jsonl"), []byte("toolu_01X"), []byte("toolu_01"))
	example := read("examples/session.json")
	files := map[string][]byte{
		"session.jsonl":                     session,
		"session.json":                      example,
		"examples/session.json":             example,
		"messages.json":                     read("testdata/openai_chat.json"),
		"messages.jsonl":                    read("testdata/messages.jsonl"),
		"request.json":                      read("testdata/anthropic_request.json"),
		"message.json":                      []byte(`{"role":"tool","tool_call_id":"call_1","content":"` + strings.Repeat("line of output\\n", 300) + `"}`),
		"transcripts/a.jsonl":               session,
		"transcripts/b.jsonl":               read("testdata/messages.jsonl"),
		"work/shared/transcripts/a.jsonl":   session,
		"work/shared/transcripts/b.json":    example,
		"work/shared/transcripts/c.jsonl":   read("testdata/openhands_output.jsonl"),
		"work/shared/transcripts/README.md": []byte("not a transcript"),
		// The files the README's command lines name.
		"a.jsonl":          session,
		"b.json":           example,
		"s.json":           read("testdata/anthropic_request.json"),
		"s.jsonl":          session,
		"history.jsonl":    session,
		"one-message.json": []byte(`{"role":"tool","tool_call_id":"call_1","content":"done"}`),
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ../shared/transcripts is the examples' folder of real transcripts.
	cwd := filepath.Join(dir, "work", "main")
	os.MkdirAll(cwd, 0o755)
	for name, data := range files {
		if !strings.HasPrefix(name, "work/") {
			p := filepath.Join(cwd, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, data, 0o644)
		}
	}
	t.Chdir(cwd)

	ran := 0
	var walk func(c *cobra.Command)
	var lines []string
	walk = func(c *cobra.Command) {
		for _, l := range strings.Split(c.Example, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "agentctx ") {
				lines = append(lines, l)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&env{s: &Streams{}}))
	helpLines := len(lines)
	lines = append(lines, readmeLines...)
	// The sessions the examples name (s1, s2, s3) exist, and the ws
	// examples read what ws offload stores: run the writers first.
	for _, s := range []string{"s1", "s2", "s3"} {
		runHelpExample(t, cwd, "agentctx prepare --session "+s+" session.jsonl > prepared-"+s+".json")
	}
	for pass := range 2 {
		for _, line := range lines {
			writer := strings.HasPrefix(line, "agentctx ws offload")
			if serverExample(line) || (pass == 0) != writer {
				continue
			}
			ran++
			runHelpExample(t, cwd, line)
		}
	}
	t.Logf("ran %d of %d examples, %d of them from --help (servers are left to their own tests)", ran, len(lines), helpLines)
	if ran < 60 {
		t.Errorf("ran %d examples, want at least 60", ran)
	}
}

// readmeCommandLines returns the agentctx command lines of the README's sh
// blocks, their comments cut, except those with a placeholder (<id>, DIR,
// a|b alternatives), which a person completes first.
func readmeCommandLines(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllSubmatch(readme, -1) {
		for _, l := range strings.Split(string(block[1]), "\n") {
			l, _, _ = strings.Cut(l, " #")
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "agentctx ") || strings.Contains(l, "<id>") || strings.Contains(l, " DIR") || strings.Contains(l, "|") {
				continue
			}
			lines = append(lines, l)
		}
	}
	if len(lines) < 20 {
		t.Fatalf("%d command lines found in the README's sh blocks", len(lines))
	}
	return lines
}

// runHelpExample runs one example line: "< FILE" is stdin, "> FILE" is
// stdout, "| jq ..." means stdout must be JSON, a glob is expanded, $PWD
// is the directory.
func runHelpExample(t *testing.T, cwd, line string) {
	t.Helper()
	cmdline, pipe, _ := strings.Cut(line, "|")
	var args []string
	var stdin []byte
	stdout := ""
	fields := strings.Fields(strings.ReplaceAll(cmdline, `"$PWD`, `"`+cwd))
	for i := 1; i < len(fields); i++ {
		f := strings.Trim(fields[i], `"'`)
		switch {
		case f == "<" && i+1 < len(fields):
			b, err := os.ReadFile(fields[i+1])
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			stdin = b
			i++
		case f == ">" && i+1 < len(fields):
			stdout = fields[i+1]
			i++
		case strings.ContainsAny(f, "*?["):
			m, _ := filepath.Glob(f)
			if len(m) == 0 {
				t.Fatalf("%s: %s matches nothing", line, f)
			}
			args = append(args, m...)
		default:
			args = append(args, f)
		}
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, Streams{In: bytes.NewReader(stdin), Out: &out, Err: &errb})
	if code != 0 {
		t.Errorf("--help example %q: exit %d: %s", line, code, errb.String())
		return
	}
	if stdout != "" {
		if err := os.WriteFile(stdout, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(pipe, "jq") {
		dec := json.NewDecoder(&out)
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Errorf("--help example %q: stdout is not JSON: %v", line, err)
				return
			}
		}
	}
}
