package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/app/projectws"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// agentctx claude in a git repository leaves git status clean: the
// workspace, with the whole tool outputs (a secret among them), is in the
// user's state directory, not in .agentctx/ of the project; ws ls and
// sessions ls run in the same directory find it (issue 48.3). The client
// is a fake claude that sends one request with a large tool result
// through the proxy, to a fake upstream.
func TestLaunchKeepsTheRepositoryClean(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	const secret = "sk-test-0123456789abcdef"
	result := "API_KEY=" + secret + "\n" + strings.Repeat("a line of the tool's long output\n", 2_000)
	body, err := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 100,
		"messages": []any{
			map[string]any{"role": "user", "content": "print the environment"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": map[string]any{"command": "env"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_01", "content": result}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, body, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	argsFile := filepath.Join(t.TempDir(), "args")
	t.Setenv("AGENTCTX_TEST_ARGS", argsFile)
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$AGENTCTX_TEST_ARGS\"\ncurl -sS -f -o /dev/null -H 'content-type: application/json' -H 'x-api-key: dummy' -H 'anthropic-version: 2023-06-01' " +
		"--data-binary @\"$AGENTCTX_TEST_BODY\" \"$ANTHROPIC_BASE_URL/v1/messages\"\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("AGENTCTX_TEST_BODY", bodyFile)
	up := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer up.Close()

	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "main.go")
	git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
	t.Chdir(repo)

	home, state := t.TempDir(), t.TempDir()
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"HOME": home, "XDG_STATE_HOME": state}[k]
		return v, ok
	}
	runHere := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, LookupEnv: lookup})
		return out.String(), errb.String(), code
	}
	if _, errOut, code := runHere("claude", "--upstream-anthropic", up.URL, "-p", "hi"); code != 0 {
		t.Fatalf("agentctx claude: exit %d: %s", code, errOut)
	}
	// The workspace is outside the project: Claude Code may read it
	// without a prompt.
	if args, err := os.ReadFile(argsFile); err != nil || !strings.Contains(string(args), "\n--add-dir="+state) {
		t.Errorf("claude's arguments give no --add-dir under the state directory %s: %q (%v)", state, args, err)
	}
	if st := git("status", "--porcelain", "--untracked-files=all", "--ignored=no"); st != "" {
		t.Errorf("git status after agentctx claude:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(repo, ".agentctx")); err == nil {
		t.Errorf("agentctx claude made .agentctx in the project")
	}
	project, err := projectws.Project(repo)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(state, "agentctx", "projects", projectws.Folder(project))
	found := false
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				found = true
			}
		}
		return nil
	})
	if !found {
		t.Fatalf("the tool result is not in the state directory's workspace %s", ws)
	}
	// The readers find the same workspace by default.
	if out, errOut, code := runHere("ws", "get", "tool_result_toolu_01"); code != 0 || !strings.Contains(out, secret) {
		t.Errorf("ws get in the project: exit %d, %.100q, %s; want the stored result", code, out, errOut)
	}
	if out, errOut, code := runHere("sessions", "ls", "--json"); code != 0 || !strings.Contains(out, `"id"`) {
		t.Errorf("sessions ls in the project: exit %d, %.200q, %s; want the session of the run", code, out, errOut)
	}
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after the reads:\n%s", st)
	}
	// --offload files writes the results to --dir, .offload of the
	// project: made with its ignore file.
	if _, errOut, code := runHere("claude", "--offload", "files", "--upstream-anthropic", up.URL, "-p", "hi"); code != 0 {
		t.Fatalf("agentctx claude --offload files: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(repo, ".offload", ".gitignore")); err != nil {
		t.Errorf("agentctx claude --offload files: %v", err)
	}
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after agentctx claude --offload files:\n%s", st)
	}
}

// A workspace or offload directory a command makes inside a git work tree
// gets an ignore file, so that git status stays clean: prepare's
// .agentctx (the single-shot default), an explicit --workspace of the
// proxy's in the repository, offload's .offload.
func TestWorkspaceInARepositoryIsIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	history := `[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + strings.Repeat("x", 60_000) + `"}]}]`
	var turns []string
	for i := range 12 {
		turns = append(turns, fmt.Sprintf(`{"role":"user","content":"step %d"}`, i),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"c%d","name":"bash","input":{}}]}`, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c%d","content":"%s"}]}`, i, strings.Repeat("y", 2_000)))
	}
	long := "[" + strings.Join(turns, ",") + "]"
	for _, c := range []struct {
		name string
		args []string
		dir  string // made in the repository
	}{
		{"prepare", []string{"prepare", "--limit", "100000", "-"}, ".agentctx"},
		{"ws offload", []string{"ws", "offload", "--session", "s1", "-"}, ".agentctx"},
		{"offload", []string{"offload", "-"}, ".offload"},
		{"compact", []string{"compact", "--force", "--limit", "5000", "-"}, ".offload"},
		{"prepare --offload files", []string{"prepare", "--offload", "files", "--limit", "100000", "-"}, ".offload"},
		{"prepare --workspace in a subdirectory", []string{"prepare", "--workspace", "build/ws", "--limit", "100000", "-"}, "build/ws"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := t.TempDir()
			cmd := exec.Command("git", "init", "-q", repo)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			t.Chdir(repo)
			in := history
			if c.name == "compact" {
				in = long
			}
			if _, errOut, code := run(t, in, c.args...); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if _, err := os.Stat(filepath.Join(repo, c.dir)); err != nil {
				t.Fatalf("%s was not made: %v", c.dir, err)
			}
			st := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
			st.Dir = repo
			out, err := st.CombinedOutput()
			if err != nil || len(out) != 0 {
				t.Errorf("git status: %v\n%s", err, out)
			}
		})
	}
}
