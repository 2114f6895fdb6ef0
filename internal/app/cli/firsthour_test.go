package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/internal/testkit/testbin"
)

// TestFirstHour replays the README's first hour as a newcomer lives it,
// with the commands the README gives: install (go install ./cmd/agentctx),
// the first command on the example session, Claude Code launched through
// agentctx claude (against the fake upstream), then the sessions listed
// and cleaned.
func TestFirstHour(t *testing.T) {
	t.Parallel() // child processes only (go, agentctx, the client), its own directories and upstream: it overlaps the other client runs
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir string, env []string, name string, args ...string) (string, string) {
		t.Helper()
		// A command runs in seconds, but for the first build: go install
		// from an empty build cache takes about 5 minutes of a 2-core
		// machine alone (README, "First build"), more while go test
		// builds the other packages beside it.
		limit := 5 * time.Minute
		if name == "go" {
			limit = 8 * time.Minute // under go test's 10 minutes a package
		}
		ctx, cancel := context.WithTimeout(t.Context(), limit)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("$ %s %s: %v\nstdout: %s\nstderr: %s", filepath.Base(name), strings.Join(args, " "), err, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
		}
		return stdout.String(), stderr.String()
	}

	// Install, as the README says.
	if !bytes.Contains(readme, []byte("go install ./cmd/agentctx")) {
		t.Fatal("the README no longer says go install ./cmd/agentctx: update this test with it")
	}
	// GOBIN is kept across runs for these sources: go install links the
	// binary the first time, and finds it up to date after.
	gobin := testbin.Dir(t, "gobin")
	run(root, append(os.Environ(), "GOBIN="+gobin), "go", "install", "./cmd/agentctx")
	bin := filepath.Join(gobin, "agentctx")
	if out, _ := run(root, nil, bin, "--version"); !strings.HasPrefix(out, "agentctx ") {
		t.Errorf("agentctx --version: %q", out)
	}

	// The README's first command, on the example, with the installed
	// binary: no key, no server.
	first := regexp.MustCompile("(?s)```sh\n([^\n]*)").FindSubmatch(readme)
	if first == nil {
		t.Fatal("the README does not start with a sh block")
	}
	line := strings.TrimSpace(strings.SplitN(string(first[1]), "#", 2)[0])
	args, ok := strings.CutPrefix(line, "go run ./cmd/agentctx ")
	if !ok {
		t.Fatalf("the README's first command is %q: not go run ./cmd/agentctx", line)
	}
	fields := strings.Fields(args)
	if n := len(fields); n < 2 || fields[n-2] != ">" {
		t.Fatalf("the README's first command %q does not write a file", line)
	}
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, "examples"), 0o755)
	example, err := os.ReadFile(filepath.Join(root, "examples", "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "examples", "session.json"), example, 0o644)
	out, _ := run(work, []string{"HOME=" + t.TempDir()}, bin, fields[:len(fields)-2]...)
	var prepared struct {
		Messages []json.RawMessage `json:"messages"`
		Report   struct {
			BelowThreshold bool `json:"below_threshold"`
			Valid          bool `json:"valid"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &prepared); err != nil || !prepared.Report.BelowThreshold || !prepared.Report.Valid || len(prepared.Messages) == 0 {
		t.Fatalf("the first command's output: %v %+v", err, prepared.Report)
	}

	// Claude Code through agentctx claude, its sessions in a workspace.
	clients := e2eclient.Install(t)
	fake := fakeupstream.New(fakeupstream.Options{})
	up := httptest.NewServer(fake)
	defer up.Close()
	path := clientBin(t, "claude", e2eclient.ClaudeCommand(clients))
	env := append(e2eclient.MinimalEnv(), "PATH="+path+":"+os.Getenv("PATH"), "HOME="+t.TempDir(), "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	ws := filepath.Join(work, "ws")
	out, _ = run(work, env, bin, "claude", "--workspace", ws, "--upstream-anthropic", up.URL, "-p", "Say ok.", "--output-format", "json")
	var res struct {
		IsError bool `json:"is_error"`
	}
	if err := json.Unmarshal(e2eclient.LastJSONLine([]byte(out)), &res); err != nil || res.IsError {
		t.Fatalf("claude's answer: %v\n%s", err, e2eclient.Tail(out))
	}
	checkUpstream(t, fake)

	// List the sessions the run kept, then clean them.
	out, _ = run(work, nil, bin, "sessions", "ls", "--workspace", ws, "--json")
	ids := sessionIDs(t, out)
	if len(ids) == 0 {
		t.Fatalf("sessions ls lists no session after a Claude Code run:\n%s", out)
	}
	run(work, nil, bin, append([]string{"sessions", "rm", "--workspace", ws}, ids...)...)
	if out, _ = run(work, nil, bin, "sessions", "ls", "--workspace", ws, "--json"); len(sessionIDs(t, out)) != 0 {
		t.Errorf("sessions ls after rm:\n%s", out)
	}
}

// sessionIDs reads the ids out of sessions ls --json (one object per line,
// or a list).
func sessionIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	add := func(raw []byte) {
		var one struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &one) == nil && one.ID != "" {
			ids = append(ids, one.ID)
		}
	}
	trimmed := strings.TrimSpace(out)
	if strings.HasPrefix(trimmed, "[") {
		var list []json.RawMessage
		if err := json.Unmarshal([]byte(trimmed), &list); err != nil {
			t.Fatalf("sessions ls --json: %v\n%s", err, out)
		}
		for _, r := range list {
			add(r)
		}
		return ids
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		add(sc.Bytes())
	}
	return ids
}
