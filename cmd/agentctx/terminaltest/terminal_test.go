package terminaltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctx/agentctx/internal/testkit/testbin"
)

// These tests drive the real binary on a pseudo-terminal, as a person at a
// terminal meets it: the hint while it waits on stdin, Ctrl-C, the progress
// bar. They build the binary once (internal/testkit/testbin) and skip where no pty can be made.

// hang is how long a test waits for something that must happen before it
// declares the binary stuck. It is a bound on a failure, not a measurement.
const hang = 60 * time.Second

// buildBinary returns the agentctx binary, built once per source tree
// (internal/testkit/testbin); it skips where no pseudo-terminal can be made.
func buildBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminal on Windows")
	}
	return testbin.Agentctx(t)
}

// term is a process running on a pseudo-terminal, and what it printed.
type term struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// startTerm runs bin with args, stdin, stdout and stderr on a new pty.
func startTerm(t *testing.T, dir, bin string, args ...string) *term {
	t.Helper()
	return startTermEnv(t, dir, nil, bin, args...)
}

// startTermEnv is startTerm with more environment variables.
func startTermEnv(t *testing.T, dir string, env []string, bin string, args ...string) *term {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TERM=xterm"), env...)
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	tm := &term{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return tm
}

func (tm *term) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// waitFor waits until the output contains s.
func (tm *term) waitFor(s string) {
	tm.t.Helper()
	deadline := time.Now().Add(hang)
	for !strings.Contains(tm.output(), s) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("no %q in the output:\n%s", s, tm.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the process to exit and returns its exit code (-1 when a
// signal killed it) and its whole output.
func (tm *term) wait() (int, string) {
	tm.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- tm.cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			tm.t.Fatal(err)
		}
	case <-time.After(hang):
		tm.t.Fatalf("the process did not exit; output:\n%s", tm.output())
	}
	select { // the rest of the output
	case <-tm.done:
	case <-time.After(5 * time.Second):
	}
	return tm.cmd.ProcessState.ExitCode(), tm.output()
}

// TestCtrlCWhileWaitingOnTheTerminal starts commands with no FILE on a
// terminal: they print a hint and wait; the first Ctrl-C stops them with
// exit 130 and the word "interrupted", and nothing else.
func TestCtrlCWhileWaitingOnTheTerminal(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	for _, args := range [][]string{{"count"}, {"prepare"}, {"validate"}} {
		t.Run(args[0], func(t *testing.T) {
			tm := startTerm(t, dir, bin, args...)
			tm.waitFor("Ctrl-D")
			if _, err := tm.tty.Write([]byte{3}); err != nil { // Ctrl-C, through the terminal's line discipline
				t.Fatal(err)
			}
			code, out := tm.wait()
			if code != 130 || !strings.Contains(out, "agentctx: interrupted") {
				t.Errorf("exit %d, output %q; want 130 and \"interrupted\"", code, out)
			}
			if strings.Contains(out, "{") {
				t.Errorf("printed JSON after Ctrl-C: %q", out)
			}
		})
	}
	// The workspace and archive directories were not created by a run that
	// read nothing.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the interrupted runs left %d entries in their directory", len(ents))
	}
}

// TestCtrlCDuringALongCount interrupts count while it counts a 25 MB
// conversation (seconds of work): exit 130 and no result. Before, count
// finished and printed its result with exit 0.
func TestCtrlCDuringALongCount(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "big.json")
	writeBigConversation(t, file)
	// One core, so that counting takes long on a fast machine too (about
	// a second at 25 MB/s) and the interrupt lands while it counts.
	tm := startTermEnv(t, dir, []string{"GOMAXPROCS=1"}, bin, "count", "-v", file)
	tm.waitFor("counting")
	if err := tm.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, out := tm.wait()
	if code != 130 || strings.Contains(out, `"tokens"`) {
		t.Errorf("exit %d, output %q; want 130 and no result", code, out)
	}
}

// writeBigConversation writes 400 messages of random words, about 25 MB
// and 12 million tokens.
func writeBigConversation(t *testing.T, file string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var msgs []map[string]string
	var b strings.Builder
	for i := range 400 {
		b.Reset()
		for range 8000 {
			for range 2 + r.IntN(11) {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
			b.WriteByte(' ')
		}
		msgs = append(msgs, map[string]string{"role": [2]string{"user", "assistant"}[i%2], "content": b.String()})
	}
	data, _ := json.Marshal(msgs)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareOutOnATerminal runs prepare --out with stdout and stderr on a
// terminal: the progress bar and the summary are shown, the JSON reports
// are not (they are with --json).
func TestPrepareOutOnATerminal(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		os.WriteFile(f, []byte(`[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]`), 0o644)
		files = append(files, f)
	}
	args := append([]string{"prepare", "--out", filepath.Join(dir, "out")}, files...)
	tm := startTerm(t, dir, bin, args...)
	code, out := tm.wait()
	if code != 0 || !strings.Contains(out, "3/3") || !strings.Contains(out, "agentctx prepare: ") || strings.Contains(out, `"report"`) {
		t.Errorf("exit %d, output:\n%s\nwant the progress bar and the summary, no JSON", code, out)
	}
	tm = startTerm(t, dir, bin, append(args, "--json")...)
	code, out = tm.wait()
	if code != 0 || strings.Count(out, `"report"`) != 3 {
		t.Errorf("--json: exit %d, output:\n%s", code, out)
	}
	// Redirected (not a terminal), the JSON goes to stdout.
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, io.Discard
	if err := cmd.Run(); err != nil || strings.Count(stdout.String(), "\n") != 3 {
		t.Errorf("redirected: %v, stdout %q", err, stdout.String())
	}
}

// TestCtrlCDuringPrepareOut interrupts prepare --out in the middle of a
// batch: exit 130, and every file in the output directory is whole (no
// temp file, each one a complete document).
func TestCtrlCDuringPrepareOut(t *testing.T) {
	bin := buildBinary(t)
	session, err := os.ReadFile("../../examples/session.json")
	if err != nil {
		t.Skip("examples/session.json not found")
	}
	dir := t.TempDir()
	var files []string
	for i := range 40 {
		f := filepath.Join(dir, fmt.Sprintf("s%02d.json", i))
		os.WriteFile(f, session, 0o644)
		files = append(files, f)
	}
	out := filepath.Join(dir, "out")
	tm := startTerm(t, dir, bin, append([]string{"prepare", "--limit", "14000", "--out", out}, files...)...)
	tm.waitFor("1/40")
	if _, err := tm.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	code, output := tm.wait()
	if code != 130 || !strings.Contains(output, "agentctx: interrupted") {
		t.Errorf("exit %d, output %q; want 130 and \"interrupted\"", code, output)
	}
	ents, _ := os.ReadDir(out)
	if len(ents) == 0 || len(ents) == len(files) {
		t.Logf("%d of %d files written before the interrupt", len(ents), len(files))
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(out, e.Name()))
		if strings.HasPrefix(e.Name(), ".tmp-") || err != nil || !json.Valid(b) {
			t.Errorf("%s is not a whole document (%v)", e.Name(), err)
		}
	}
}
