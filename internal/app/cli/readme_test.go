package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/app/cli"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/pipeline"
)

// TestREADMEExamples runs the console examples of README.md ("$ agentctx
// ..." lines followed by their output) in a scratch copy of examples/ and
// compares what the commands print with what the README shows. In the
// README's output "..." stands for any text (paths, times). A command may
// redirect stdout with "> FILE"; stderr is a terminal, as for a person.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	session, err := os.ReadFile("../../../examples/session.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "examples"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "examples", "session.json"), session, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	blocks := regexp.MustCompile("(?s)```console\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no console example")
	}
	ran := 0
	printed := map[string][]string{} // command → its output
	for _, b := range blocks {
		var cmd string
		var want []string
		flush := func() {
			if cmd == "" {
				return
			}
			ran++
			got := runReadmeCommand(t, dir, cmd)
			printed[cmd] = got
			if !matchLines(got, want) {
				t.Errorf("README: $ %s\nprints:\n%s\nthe README shows:\n%s", cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		for _, line := range strings.Split(strings.TrimRight(string(b[1]), "\n"), "\n") {
			if c, ok := strings.CutPrefix(line, "$ "); ok {
				flush()
				cmd, want = c, nil
				continue
			}
			want = append(want, line)
		}
		flush()
	}
	if ran < 3 {
		t.Errorf("ran %d README commands, want at least 3", ran)
	}

	// The introduction quotes the same figures as the examples print.
	tokensOf := func(cmd string) int {
		var c struct{ Tokens int }
		if out := printed[cmd]; len(out) == 0 || json.Unmarshal([]byte(out[0]), &c) != nil {
			t.Fatalf("README: no JSON count printed by %q", cmd)
		}
		return c.Tokens
	}
	before := tokensOf("agentctx count examples/session.json")
	after := tokensOf("agentctx count prepared.json")
	for _, fig := range []string{
		"98 messages, " + textfmt.Thousands(before) + " tokens",
		"a `\"report\"`: about " + textfmt.Thousands((after+50)/100*100) + " tokens",
	} {
		if !bytes.Contains(readme, []byte(fig)) {
			t.Errorf("README.md does not quote %q", fig)
		}
	}
}

// runReadmeCommand runs one "agentctx ..." line in-process and returns its
// output lines: stdout (unless redirected) then stderr.
func runReadmeCommand(t *testing.T, dir, line string) []string {
	t.Helper()
	args := strings.Fields(line)
	if len(args) == 0 || args[0] != "agentctx" {
		t.Fatalf("README command %q does not start with agentctx", line)
	}
	args = args[1:]
	redirect := ""
	if i := indexOf(args, ">"); i >= 0 && i == len(args)-2 {
		redirect, args = args[i+1], args[:i]
	}
	var out, errb bytes.Buffer
	code := cli.Run(t.Context(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb, ErrIsTerminal: true})
	if code != 0 {
		t.Fatalf("README: $ %s: exit %d: %s", line, code, errb.String())
	}
	text := errb.String()
	if redirect != "" {
		if err := os.WriteFile(filepath.Join(dir, redirect), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		text = out.String() + text
	}
	return strings.Split(strings.TrimRight(text, "\n"), "\n")
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// matchLines reports whether got matches want line by line, "..." in want
// matching any text.
func matchLines(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		parts := strings.Split(want[i], "...")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got[i]) {
			return false
		}
	}
	return true
}

// TestExamplesREADME: examples/README.md quotes what prepare does to the
// example session.
func TestExamplesREADME(t *testing.T) {
	readme, err := os.ReadFile("../../../examples/README.md")
	if err != nil {
		t.Fatal(err)
	}
	session, err := filepath.Abs("../../../examples/session.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, out, stderr := runCLI(t, "", "prepare", "--limit", "14000", session)
	if code != 0 {
		t.Fatalf("prepare: exit %d: %s", code, stderr)
	}
	var body struct {
		Report pipeline.Report `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatal(err)
	}
	r := body.Report
	steps := map[pipeline.Step]pipeline.StepReport{}
	for _, s := range r.Steps {
		steps[s.Step] = s
	}
	archive := ""
	for _, f := range steps["compact"].Files {
		archive = strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
	}
	for _, fig := range []string{
		textfmt.Thousands(r.TokensBefore) + " o200k_base tokens",
		fmt.Sprintf("%d stale successful terminal outputs", steps["prune"].Changed),
		fmt.Sprintf("all %d tool results are stored whole", len(steps["offload"].Artifacts)),
		"artifact `" + archive + "`",
		"About " + textfmt.Thousands(r.TokensBefore) + " → " + textfmt.Thousands((r.TokensAfter+50)/100*100) + " tokens",
	} {
		if !bytes.Contains(readme, []byte(fig)) {
			t.Errorf("examples/README.md does not quote %q", fig)
		}
	}
}
