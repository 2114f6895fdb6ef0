package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/savings"
)

// agentctx gemini runs the real Gemini CLI (headless, offline) through its
// proxy against the fake upstream, on a short scripted task: four shell
// steps, then the final answer quoting the last output's check value.
// Every request reaches the fake through the proxy and is accepted
// (thought signatures and function responses as Gemini CLI sent them),
// the answer is right, and the proxy billed what the fake billed: its log
// lines, its ledger (agentctx savings) and the fake's bill agree, the
// bill without agentctx the same (nothing is edited yet); the requests
// are one session, and the key is in no log line.
func TestLaunchGeminiCLIE2E(t *testing.T) {
	for _, model := range []string{"gemini-2.5-flash", "gemini-3-pro-preview"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel() // child processes only, its own fake, home and directories
			launchGeminiCLI(t, model)
		})
	}
}

func launchGeminiCLI(t *testing.T, model string) {
	dir := e2eclient.InstallGemini(t)
	const steps, key = 4, "AIza-e2e-gemini-key-42"
	work, home, ws := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "ws")
	task := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: steps, Dir: work, SmallOutputs: true, Thinking: true})
	if err := task.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	fake := fakeupstream.New(fakeupstream.Options{Script: task.Script})
	up := httptest.NewServer(fake)
	defer up.Close()
	// The environment points Gemini CLI at nothing: the launch must set
	// GOOGLE_GEMINI_BASE_URL to its proxy.
	env, err := e2eclient.GeminiEnv(home, "http://127.0.0.1:9", key)
	if err != nil {
		t.Fatal(err)
	}
	bin := clientBin(t, "gemini", e2eclient.GeminiCommand(dir))
	env = append(env, "PATH="+bin+":"+os.Getenv("PATH"))
	logFile := filepath.Join(t.TempDir(), "proxy.log")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentctxBinary(t), "gemini", "--upstream-gemini", up.URL, "--workspace", ws, "--log", logFile, "--",
		"-p", "Run the maintenance task with the shell tool and report the final check.",
		"-m", model, "--approval-mode", "yolo", "--output-format", "text")
	cmd.Dir, cmd.Env = work, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	bill := fake.Bill()
	for i, r := range fake.Records() {
		if runErr != nil || bill.Rejections > 0 {
			t.Logf("request %d: %s %s (%d bytes) rejected=%q", i, r.Method, r.Path, r.Size, r.Rejected)
		}
	}
	if runErr != nil {
		t.Fatalf("agentctx gemini: %v\nstdout: %s\nstderr: %s", runErr, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	if want := task.CorrectAnswer(); !strings.Contains(stdout.String(), want) {
		t.Errorf("gemini's answer does not contain %q:\n%s\nstderr: %s", want, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	if st := task.Stats(); st.Steps != steps {
		t.Errorf("the task ran %d steps, want %d: %+v", st.Steps, steps, st)
	}
	if bill.Rejections != 0 || bill.Requests < steps+1 || bill.USD <= 0 {
		t.Fatalf("the fake's bill %+v: want at least %d requests, none rejected", bill.Totals, steps+1)
	}

	// The proxy's bill, by its log: one line per Gemini request, with its
	// cost (rounded to a millionth of a dollar), without and with agentctx.
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(log, []byte(key)) {
		t.Errorf("the key is in the proxy's log")
	}
	var n int
	var cost, without float64
	sessions := map[string]bool{}
	re := regexp.MustCompile(`api=gemini session=(\S+) .*cost_usd=([0-9.e-]+) cost_without_usd=([0-9.e-]+)`)
	for _, line := range strings.Split(string(log), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			c, _ := strconv.ParseFloat(m[2], 64)
			w, _ := strconv.ParseFloat(m[3], 64)
			n, cost, without = n+1, cost+c, without+w
			sessions[m[1]] = true
		}
	}
	if len(sessions) != 1 {
		t.Errorf("the task's requests are %d sessions, want one: %v", len(sessions), sessions)
	}
	if n != bill.Requests || math.Abs(cost-bill.USD) > float64(n)*1e-6 || cost != without {
		t.Errorf("the proxy billed %d requests, $%v (without agentctx $%v); the fake %d, $%v\n%s", n, cost, without, bill.Requests, bill.USD, log)
	}
	// The ledger, by agentctx savings.
	code, out, errOut := runCLI(t, "", "savings", "--workspace", ws, "--json")
	var rep savings.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Periods) == 0 {
		t.Fatalf("savings: exit %d, %v: %s %s", code, err, out, errOut)
	}
	all := rep.Periods[len(rep.Periods)-1]
	if all.Requests != bill.Requests || math.Abs(all.CostUSD-bill.USD) > 1e-5 || all.CostWithoutUSD != all.CostUSD {
		t.Errorf("the ledger: %+v; the fake's bill %+v", all.Totals, bill.Totals)
	}
	t.Logf("%s: %d requests, the fake's bill $%v, the proxy's $%v", model, bill.Requests, bill.USD, cost)
}
