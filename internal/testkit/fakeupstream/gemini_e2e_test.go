package fakeupstream_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// The real Gemini CLI, headless and offline, runs a short scripted task
// against the fake directly: four shell steps through run_shell_command,
// then the final answer quoting the last output's check value. The fake
// must accept every request (thought signatures and function responses
// included) and bill them.
func TestGeminiCLIAgainstTheFake(t *testing.T) {
	for _, model := range []string{"gemini-2.5-flash", "gemini-3-pro-preview"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel() // its own fake, home and working directory
			runGeminiCLI(t, model)
		})
	}
}

func runGeminiCLI(t *testing.T, model string) {
	dir := e2eclient.InstallGemini(t)
	const steps = 4
	work, home := t.TempDir(), t.TempDir()
	task := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: steps, Dir: work, SmallOutputs: true, Thinking: true})
	if err := task.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	fake := fakeupstream.New(fakeupstream.Options{Script: task.Script})
	srv := httptest.NewServer(fake)
	defer srv.Close()

	env, err := e2eclient.GeminiEnv(home, srv.URL, "fake-gemini-key")
	if err != nil {
		t.Fatal(err)
	}
	argv := append(e2eclient.GeminiCommand(dir), "-p", "Run the maintenance task with the shell tool and report the final check.",
		"-m", model, "--approval-mode", "yolo", "--output-format", "text")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = work, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	bill := fake.Bill()
	for i, r := range fake.Records() {
		if runErr != nil || bill.Rejections > 0 {
			t.Logf("request %d: %s %s (%d bytes) rejected=%q", i, r.Method, r.Path, r.Size, r.Rejected)
		}
		if d := os.Getenv("AGENTCTX_E2E_DUMP"); d != "" {
			os.WriteFile(fmt.Sprintf("%s/gemini-%s-req%d.json", d, model, i), r.Body, 0o644)
		}
	}
	if runErr != nil {
		t.Fatalf("gemini: %v\nstdout: %s\nstderr: %s", runErr, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	if want := task.CorrectAnswer(); !strings.Contains(stdout.String(), want) {
		t.Errorf("gemini's answer does not contain %q:\n%s\nstderr: %s", want, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	if st := task.Stats(); st.Steps != steps {
		t.Errorf("the task ran %d steps, want %d: %+v", st.Steps, steps, st)
	}
	if bill.Rejections != 0 {
		t.Errorf("the fake rejected %d requests", bill.Rejections)
	}
	if bill.Requests < steps+1 || bill.Input == 0 || bill.Output == 0 || bill.USD <= 0 {
		t.Errorf("bill %+v: want at least %d billed requests, with input, output and a cost", bill.Totals, steps+1)
	}
	signed := 0
	for _, r := range fake.Records() {
		if r.Path != "" && !strings.Contains(r.Path, ":") {
			t.Errorf("Gemini CLI asked %s %s of the fake: only the model methods should be called", r.Method, r.Path)
		}
		if bytes.Contains(r.Body, []byte(fakeupstream.GeminiSignaturePrefix)) {
			signed++
		}
	}
	if signed == 0 {
		t.Error("no request carried a thought signature back: the signature rule was not exercised")
	}
	t.Logf("%s: %d requests, bill %+v", model, len(fake.Records()), bill.Totals)
}
