// Command costsim is the cost simulation of issue 22: the real Claude Code
// and the real Codex run a long scripted task (fakeupstream.LongTask:
// -steps tool steps whose outputs are 2,000 to 60,000 characters, then a
// final answer) against the fake upstream, which bills like the real APIs
// with a prompt-cache simulator, once direct and once through `agentctx
// proxy`. The session's clock is simulated: the fake's cache clock and the
// proxy's clock (--clock-speed) both run -clock-speed times faster than
// the wall clock, so that results age, and prompt caches expire, as in a
// session of hours. One step in 12 is a slow build that pauses 6 minutes
// of session time, past Anthropic's 5-minute cache lifetime.
//
//	go run ./bench/cmd/costsim [-client claude|codex|both] [-steps 120] [-clock-speed 60] [-arms direct,proxy] [-thinking] [-v] [-- proxy flags]
//
// Each arm runs in a fresh working directory, with a fresh fake (its own
// prompt caches and bill) and, for the proxy arm, a fresh proxy and
// workspace. It prints a markdown table per run: requests, input, cache
// read, cache write, output, the bill in USD and its ratio to the direct
// arm, the largest request, rejections, the summary requests (the
// client's own compactions and the proxy's) and whether the final answer
// is correct. With -thinking the model answers each step of a request that
// asks for thinking (Claude Code's do) with a signed thinking block first,
// so the history carries them (without it the model never thinks). -v
// prints one line per model request (its usage, from the
// bill). The clients are the ones the end-to-end tests install
// (internal/testkit/e2eclient); `go test ./internal/testkit/e2eclient` installs them.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/textfmt"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// Models the clients run with.
const (
	claudeModel = "claude-sonnet-4-5"
	codexModel  = "gpt-5-codex"
)

func main() {
	var cfg config
	client := flag.String("client", "both", "claude, codex or both")
	arms := flag.String("arms", "direct,proxy", "the arms to run, in order: direct, proxy")
	flag.IntVar(&cfg.Steps, "steps", 120, "tool steps of the task")
	flag.Float64Var(&cfg.ClockSpeed, "clock-speed", 60, "the session's clock runs this many times faster than the wall clock")
	flag.StringVar(&cfg.Bin, "bin", "", "agentctx binary (default: go build ./cmd/agentctx)")
	flag.BoolVar(&cfg.Verbose, "v", false, "print one line per model request: its usage and cost")
	flag.StringVar(&cfg.Dump, "dump", "", "write each model request's body into this directory (CLIENT-ARM-NNN.json), with -v")
	flag.DurationVar(&cfg.Timeout, "timeout", 45*time.Minute, "bound of one arm's client run")
	flag.BoolVar(&cfg.Thinking, "thinking", false, "the model thinks before each step when the request asks for thinking (Claude Code does): signed thinking blocks in the history")
	flag.StringVar(&cfg.ProxyLog, "proxy-log", "", "write each proxy arm's log into this directory (CLIENT-proxy.log)")
	flag.Parse()
	switch *client {
	case "both":
		cfg.Clients = []string{"claude", "codex"}
	case "claude", "codex":
		cfg.Clients = []string{*client}
	default:
		fmt.Fprintf(os.Stderr, "costsim: invalid -client %q: want claude, codex or both\n", *client)
		os.Exit(2)
	}
	for _, a := range strings.Split(*arms, ",") {
		if a = strings.TrimSpace(a); a != "direct" && a != "proxy" {
			fmt.Fprintf(os.Stderr, "costsim: invalid arm %q: want direct or proxy\n", a)
			os.Exit(2)
		}
		cfg.Arms = append(cfg.Arms, strings.TrimSpace(a))
	}
	cfg.ProxyArgs = flag.Args()
	cfg.ClientDir = e2eclient.Cache()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg, os.Stderr)
	printTable(os.Stdout, cfg, res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "costsim:", err)
		os.Exit(1)
	}
}

// config is a run.
type config struct {
	Clients    []string // claude, codex
	Arms       []string // direct, proxy
	Steps      int
	ClockSpeed float64
	Bin        string
	Verbose    bool
	Dump       string
	ProxyLog   string
	Thinking   bool
	Timeout    time.Duration
	ProxyArgs  []string
	// ClientDir is the directory the clients are installed in.
	ClientDir string
}

// result is one arm's outcome.
type result struct {
	Client, Arm string
	Bill        fakeupstream.Totals
	Stats       fakeupstream.LongTaskStats
	// Final is the client's final answer; OK reports that it is the
	// task's correct answer.
	Final string
	OK    bool
	// Wall is the client's run time; Session the session time it stands
	// for.
	Wall, Session time.Duration
	Err           error
}

// run builds agentctx when needed and runs every client's arms in turn;
// it logs progress to log.
func run(ctx context.Context, cfg config, log io.Writer) ([]result, error) {
	if cfg.Steps < 1 || cfg.ClockSpeed <= 0 {
		return nil, fmt.Errorf("invalid -steps %d or -clock-speed %g", cfg.Steps, cfg.ClockSpeed)
	}
	for _, c := range cfg.Clients {
		argv := e2eclient.ClaudeCommand(cfg.ClientDir)
		if c == "codex" {
			argv = e2eclient.CodexCommand(cfg.ClientDir)
		}
		if _, err := os.Stat(argv[len(argv)-1]); err != nil {
			return nil, fmt.Errorf("%s is not installed in %s (go test ./internal/testkit/e2eclient installs it): %w", c, cfg.ClientDir, err)
		}
	}
	tmp, err := os.MkdirTemp("", "costsim-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if cfg.Bin == "" && contains(cfg.Arms, "proxy") {
		cfg.Bin = filepath.Join(tmp, "agentctx")
		fmt.Fprintln(log, "costsim: building agentctx")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", cfg.Bin, "github.com/agentctx/agentctx/cmd/agentctx").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	for _, d := range []string{cfg.Dump, cfg.ProxyLog} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var (
		res  []result
		errs []error
	)
	for _, client := range cfg.Clients {
		for _, arm := range cfg.Arms {
			fmt.Fprintf(log, "costsim: %s %s: %d steps, clock ×%g\n", client, arm, cfg.Steps, cfg.ClockSpeed)
			r := runArm(ctx, cfg, client, arm, log)
			fmt.Fprintf(log, "costsim: %s %s: %d requests, $%.4f, %s wall (%s of session), final answer %q\n",
				client, arm, r.Bill.Requests, r.Bill.USD, r.Wall.Round(time.Second), r.Session.Round(time.Minute), r.Final)
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", client, arm, r.Err))
			}
			res = append(res, r)
			if ctx.Err() != nil {
				return res, errors.Join(append(errs, ctx.Err())...)
			}
		}
	}
	return res, errors.Join(errs...)
}

func contains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}

// accelerated returns a clock that reads start at start and runs speed
// times faster than the wall clock (as agentctx proxy --clock-speed).
func accelerated(start time.Time, speed float64) func() time.Time {
	return func() time.Time { return start.Add(time.Duration(float64(time.Since(start)) * speed)) }
}

// runArm runs one client in one arm: a fresh working directory, fake and
// (proxy arm) proxy.
func runArm(ctx context.Context, cfg config, client, arm string, log io.Writer) (r result) {
	r = result{Client: client, Arm: arm}
	tmp, err := os.MkdirTemp("", "costsim-arm-")
	if err != nil {
		r.Err = err
		return r
	}
	defer os.RemoveAll(tmp)
	work, home, pdir := filepath.Join(tmp, "work"), filepath.Join(tmp, "home"), filepath.Join(tmp, "proxy")
	for _, d := range []string{work, home, pdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.Err = err
			return r
		}
	}
	if err := fakeupstream.WriteLongTaskFiles(work, cfg.Steps); err != nil {
		r.Err = err
		return r
	}
	start := time.Now()
	clock := accelerated(start, cfg.ClockSpeed)
	model := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: cfg.Steps, Dir: work,
		ClockSpeed: cfg.ClockSpeed, SummaryHeader: proxy.HeaderSummary, SummaryTitle: compact.SummaryTitle, Thinking: cfg.Thinking})
	fake := fakeupstream.New(fakeupstream.Options{Script: model.Script, Now: clock})
	var h http.Handler = fake
	if cfg.Verbose {
		h = &perRequest{fake: fake, start: start, clock: clock, w: log, prefix: client + "/" + arm, dump: cfg.Dump}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.Err = err
		return r
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	if arm == "proxy" {
		p, err := startProxy(ctx, cfg, pdir, home, base)
		if err != nil {
			r.Err = err
			return r
		}
		defer func() {
			p.stop(log, r.Err != nil)
			if cfg.ProxyLog != "" {
				if err := os.WriteFile(filepath.Join(cfg.ProxyLog, client+"-proxy.log"), []byte(p.log.String()), 0o644); err != nil {
					fmt.Fprintln(log, "costsim:", err)
				}
			}
		}()
		base = p.base
	}
	actx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	t0 := time.Now()
	if client == "claude" {
		r.Final, err = runClaude(actx, cfg, work, home, base)
	} else {
		r.Final, err = runCodex(actx, cfg, work, home, base)
	}
	r.Wall = time.Since(t0)
	r.Session = time.Duration(float64(r.Wall) * cfg.ClockSpeed)
	r.Bill = fake.Bill().Totals
	r.Stats = model.Stats()
	r.OK = err == nil && strings.Contains(r.Final, fakeupstream.LongTaskAnswer(cfg.Steps))
	switch {
	case err != nil:
		r.Err = err
	case !r.OK:
		r.Err = fmt.Errorf("the final answer %q is not %q (the model reached step %d)", r.Final, fakeupstream.LongTaskAnswer(cfg.Steps), r.Stats.LastStep)
	}
	for _, rec := range fake.Records() {
		if rec.Rejected != "" {
			fmt.Fprintf(log, "costsim: %s %s: the fake rejected a request of %d bytes: %s\n", client, arm, rec.Size, rec.Rejected)
		}
	}
	return r
}

// proxyProc is a running agentctx proxy.
type proxyProc struct {
	cmd  *exec.Cmd
	base string
	log  *e2eclient.SyncBuffer
}

// startProxy runs `agentctx proxy` in dir (its workspace dir/.agentctx)
// with the simulated clock, in front of upstream.
func startProxy(ctx context.Context, cfg config, dir, home, upstream string) (*proxyProc, error) {
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", upstream, "--upstream-openai", upstream,
		"--clock-speed", fmt.Sprint(cfg.ClockSpeed)}, cfg.ProxyArgs...)
	cmd := exec.Command(cfg.Bin, args...)
	cmd.Dir = dir
	cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+home)
	p := &proxyProc{cmd: cmd, log: &e2eclient.SyncBuffer{}}
	cmd.Stderr = p.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "ANTHROPIC_BASE_URL="); ok {
				lines <- v
			}
		}
	}()
	select {
	case p.base = <-lines:
		return p, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	p.stop(io.Discard, false)
	return nil, fmt.Errorf("agentctx proxy did not print its address:\n%s", e2eclient.Tail(p.log.String()))
}

// stop ends the proxy (SIGTERM, then SIGKILL after 10 s) and prints the
// tail of its log when failed.
func (p *proxyProc) stop(log io.Writer, failed bool) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	if failed {
		fmt.Fprintf(log, "agentctx proxy log:\n%s\n", e2eclient.Tail(p.log.String()))
	}
}

// prompt is the user's request: it names no step (the model finds its
// steps in the requests).
const prompt = "Run the long maintenance task: one tool call per step, as the steps come, then report the final check exactly as LONGTASK COMPLETE steps=N check=VALUE."

func runClaude(ctx context.Context, cfg config, work, home, base string) (string, error) {
	argv := append(e2eclient.ClaudeCommand(cfg.ClientDir), "-p", prompt, "--model", claudeModel,
		"--allowedTools", "Bash Read", "--output-format", "json")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+home, "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("claude: %v\nstdout: %s\nstderr: %s", err, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	var res struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(e2eclient.LastJSONLine(stdout.Bytes()), &res); err != nil {
		return "", fmt.Errorf("claude output is not JSON: %v\n%s", err, e2eclient.Tail(stdout.String()))
	}
	if res.IsError {
		return res.Result, fmt.Errorf("claude ended with an error: %q", res.Result)
	}
	return strings.TrimSpace(res.Result), nil
}

// codexConfig is Codex's config: the fake (or the proxy) as a Responses
// provider; the window of the fake (200,000 tokens) with Codex's own
// compaction below it, at about Claude Code's threshold; tool outputs
// whole (Codex cuts them to about 10,000 characters by default).
const codexConfig = `model = "%s"
model_provider = "costsim"
model_context_window = 200000
model_auto_compact_token_limit = 160000
tool_output_token_limit = 100000
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.costsim]
name = "costsim"
base_url = "%s/v1"
wire_api = "responses"
env_key = "COSTSIM_FAKE_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
`

func runCodex(ctx context.Context, cfg config, work, home, base string) (string, error) {
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fmt.Sprintf(codexConfig, codexModel, base)), 0o644); err != nil {
		return "", err
	}
	argv := append(e2eclient.CodexCommand(cfg.ClientDir), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+home, "CODEX_HOME="+codexHome, "COSTSIM_FAKE_KEY=dummy")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("codex: %v\nstdout: %s\nstderr: %s", err, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// perRequest logs the usage of each model request, from the bill before
// and after it (requests in flight at once share their lines).
type perRequest struct {
	fake   *fakeupstream.Server
	start  time.Time
	clock  func() time.Time
	w      io.Writer
	prefix string
	dump   string
	mu     sync.Mutex
	n      int
}

func (p *perRequest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		p.fake.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	before := p.fake.Bill().Totals
	p.fake.ServeHTTP(w, r)
	after := p.fake.Bill().Totals
	kind := "step"
	switch {
	case r.Header.Get(proxy.HeaderSummary) != "":
		kind = "proxy-summary"
	case bytes.Contains(body, []byte("Your task is to create a detailed summary of the conversation so far")) || bytes.Contains(body, []byte("CONTEXT CHECKPOINT COMPACTION")):
		kind = "client-summary"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.dump != "" {
		os.WriteFile(filepath.Join(p.dump, fmt.Sprintf("%s-%03d.json", strings.ReplaceAll(p.prefix, "/", "-"), p.n)), body, 0o644)
	}
	fmt.Fprintf(p.w, "%s #%d t=%s %s last=%s bytes=%d in=%d read=%d write=%d/%d out=%d usd=%.4f rejected=%d\n",
		p.prefix, p.n, p.clock().Sub(p.start).Round(time.Second), kind, lastMarker(body), len(body),
		after.Input-before.Input, after.CacheRead-before.CacheRead, after.CacheWrite-before.CacheWrite, after.CacheWrite1h-before.CacheWrite1h,
		after.Output-before.Output, after.USD-before.USD, after.Rejections-before.Rejections)
}

// lastMarker returns the highest step marker in b, or "-".
func lastMarker(b []byte) string {
	last := "-"
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("lt-step-"))
		if j < 0 {
			return last
		}
		m := string(b[i+j : min(len(b), i+j+11)])
		if m > last || last == "-" {
			last = m
		}
		i += j + 8
	}
}

// printTable prints the results as a markdown table.
func printTable(w io.Writer, cfg config, res []result) {
	if len(res) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d steps, clock ×%g", cfg.Steps, cfg.ClockSpeed)
	if cfg.Thinking {
		fmt.Fprint(w, ", thinking")
	}
	if len(cfg.ProxyArgs) > 0 {
		fmt.Fprintf(w, ", proxy flags %q", cfg.ProxyArgs)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| client | arm | requests | input | cache read | cache write 5m / 1h | output | bill USD | × direct | largest request | rejections | summaries client / proxy | final answer | wall / session |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|")
	direct := map[string]float64{}
	for _, r := range res {
		if r.Arm == "direct" {
			direct[r.Client] = r.Bill.USD
		}
	}
	for _, r := range res {
		ratio := "—"
		if d, ok := direct[r.Client]; ok && d > 0 {
			ratio = fmt.Sprintf("%.2f×", r.Bill.USD/d)
		}
		ans := "correct"
		if !r.OK {
			ans = "WRONG"
			if r.Err != nil {
				ans = "FAILED"
			}
		}
		b := r.Bill
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s / %s | %s | %.4f | %s | %s | %d | %d / %d | %s | %s / %s |\n",
			r.Client, r.Arm, b.Requests, textfmt.Thousands(b.Input), textfmt.Thousands(b.CacheRead), textfmt.Thousands(b.CacheWrite), textfmt.Thousands(b.CacheWrite1h), textfmt.Thousands(b.Output),
			b.USD, ratio, textfmt.Thousands(b.LargestRequest), b.Rejections, r.Stats.ClientSummaries, r.Stats.ProxySummaries, ans,
			r.Wall.Round(time.Second), hm(r.Session))
	}
	if cfg.Thinking {
		fmt.Fprintln(w)
		for _, r := range res {
			fmt.Fprintf(w, "thinking, %s %s: %d blocks received, %d invalid, drop_block on %d of %d requests\n",
				r.Client, r.Arm, r.Bill.ThinkingBlocks, r.Bill.InvalidThinking, r.Bill.DropBlockRequests, r.Bill.Requests)
		}
	}
}

func hm(d time.Duration) string {
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
