// Command costsim is the cost simulation of issues 22 and 45: the real
// Claude Code and the real Codex run a long scripted task
// (fakeupstream.LongTask, chained: each step's command needs a value the
// previous output printed, and the final answer quotes three values
// printed early) against the fake upstream, which bills like the real
// APIs with a prompt-cache simulator, once direct and once through
// `agentctx proxy`. The session's clock is simulated: the fake's cache
// clock and the proxy's clock (--clock-speed) both run -clock-speed times
// faster than the wall clock, so that results age, and prompt caches
// expire, as in a session of hours.
//
//	go run ./bench/cmd/costsim [flags] [-- proxy flags]
//
// # One run
//
// Each arm runs in a fresh working directory, with a fresh fake (its own
// prompt caches and bill) and, for the proxy arm, a fresh proxy and
// workspace. It prints a markdown table per run: requests, input, cache
// read, cache write, output, the bill in USD and its ratio to the direct
// arm, the largest request, rejections, the summary requests (the
// client's own compactions and the proxy's), the read-back turns (the
// model read a pointer back because a value it needed was gone) and
// whether the final answer is correct.
//
// # The matrix
//
// Every dimension flag takes a comma-separated list, and costsim runs
// the cross product of the lists, -runs times each cell: clients
// (-client), regimes (-regime), lengths (-steps), output sizes
// (-outputs) and thinking (-thinking; Codex's cells have it off: the
// model thinks on Anthropic requests only).
// A cell is named CLIENT/REGIME/STEPS/OUTPUTS/THINKING, such as
// claude/warm/120/large/off. With -matrix, every dimension not given
// defaults to all its values (claude,codex; warm,cold,ttl1h; 30,120,300;
// small,large; off,on) and -runs to 3. After the runs' table it prints,
// per cell, the median bill of each arm, the median ratio proxy/direct
// and its spread (the lowest and highest ratio of the runs), the rejected
// requests, the correct answers and the median read-back turns of each
// arm.
//
// # Flags
//
//	-client LIST      claude, codex or both (default both)
//	-regime LIST      warm: no idle gap reaches the 5-minute cache lifetime
//	                  (the slow build, one step in 12, takes 60 s of session);
//	                  cold (the default): the slow build pauses 6 minutes of
//	                  session, past the lifetime; ttl1h: the pauses of cold,
//	                  and the client asks for the long lifetimes (see below)
//	-steps LIST       tool steps of the task (default 120; the matrix: 30,120,300)
//	-outputs LIST     large: outputs of 2,500 to 55,000 characters (the default);
//	                  small: 500 to 5,000
//	-thinking[=LIST]  the model thinks before each step when the request asks
//	                  for thinking (Claude Code's do): signed thinking blocks
//	                  in the history; -thinking is on, -thinking=off,on both
//	-matrix           every dimension not given takes all its values; -runs 3
//	-cells LIST       run these cells (CLIENT/REGIME/STEPS/OUTPUTS/THINKING)
//	                  instead of the cross product of the dimension flags
//	-runs N           runs per cell (default 1, with -matrix 3)
//	-parallel N       runs at a time (default 1); a run is one cell's arms in
//	                  turn, each a client and a proxy, so N of 2 or more
//	                  stretches the simulated sessions of a loaded machine
//	-arms LIST        the arms to run, in order: direct, proxy (default both)
//	-clock-speed X    the session's clock runs X times faster than the wall
//	                  clock (default 60)
//	-out FILE         write every run's full numbers as JSON, to re-tabulate
//	-trace DIR        record every request each arm's client sends (after
//	                  the ttl1h stand-in, before the proxy): DIR/CLIENT-ARM
//	                  for one run of one cell per client, else
//	                  DIR/CELL/RUN/CLIENT-ARM (CELL with dashes for slashes);
//	                  see Traces below
//	-bin FILE         agentctx binary (default: go build ./cmd/agentctx)
//	-timeout D        bound of one arm's client run (default 45m)
//	-v                print one line per model request: its usage and cost
//	-dump DIR         with -v, write each model request's body into DIR
//	                  (CLIENT-ARM-NNN.json; per run as -trace with more runs)
//	-proxy-log DIR    write each proxy arm's log into DIR (CLIENT-proxy.log;
//	                  per run as -trace with more runs)
//
// Flags after -- go to `agentctx proxy`.
//
// # The ttl1h regime
//
// A client that asks for the long prompt-cache lifetimes: on Anthropic,
// every cache_control breakpoint carries "ttl":"1h" (billed as 1-hour
// writes by the fake); on OpenAI's Responses API the request carries
// "prompt_cache_retention":"24h" (the fake then keeps its prefixes for
// 24 hours, fakeupstream.ExtendedRetention). Claude Code runs with its own
// setting, ENABLE_PROMPT_CACHING_1H=1; Codex has none, so a small shim
// between the client and the arm's endpoint (the fake, or the proxy)
// rewrites each request body as a client that asks would send it
// (askLongCache; it also gives "ttl":"1h" to any breakpoint Claude Code
// leaves at 5 minutes). The shim stands in for the client's setting: the
// proxy arm sees the rewritten requests, as it would a client's.
//
// # Traces
//
// With -trace, each arm's directory holds requests.jsonl, one line per
// request the client sent, in order,
//
//	{"n":1,"at":"2026-12-02T16:00:19.494009692Z","method":"POST","path":"/v1/messages","header":{...},"body":"0001.json"}
//
// where at is the time on the session's clock (the clock of the fake's
// caches and of the proxy: the arm's start plus the wall time elapsed
// times -clock-speed), header the request's headers without credentials,
// and body the file beside it that holds the body's bytes (empty for a
// request without a body). Beside them, meta.json names the arm's
// directories: the client's working directory (client_dir) and, for the
// proxy arm, the proxy's (proxy_dir) and its workspace's (workspace),
// whose paths the references and the model's reads of them hold; and the
// task's clock speed and slow build (clock_speed, slow_build), which the
// model's commands are written with.
// bench/internal/tracereplay reads them, and replays in the same
// directories.
//
// The clients are the ones the end-to-end tests install
// (internal/testkit/e2eclient); `go test ./bench/cmd/costsim` installs
// them.
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
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/app/projectws"
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
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "costsim:", err)
		os.Exit(2)
	}
	cfg.ClientDir = e2eclient.Cache()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg, os.Stderr)
	printTable(os.Stdout, cfg, res)
	if cfg.Out != "" {
		if werr := writeJSON(cfg.Out, cfg, res); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "costsim:", err)
		os.Exit(1)
	}
}

// The values of the dimensions.
var (
	allClients = []string{"claude", "codex"}
	allRegimes = []string{"warm", "cold", "ttl1h"}
	allLengths = []int{30, 120, 300}
	allOutputs = []string{"small", "large"}
)

// parseFlags parses the command line into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("costsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := fs.String("client", "both", "claude, codex or both (a list in a matrix)")
	regime := fs.String("regime", "cold", "warm, cold or ttl1h (a list in a matrix)")
	steps := fs.String("steps", "120", "tool steps of the task (a list in a matrix)")
	outputs := fs.String("outputs", "large", "output sizes: small (500-5,000 characters) or large (2,500-55,000) (a list in a matrix)")
	thinking := &thinkingFlag{v: []bool{false}}
	fs.Var(thinking, "thinking", "the model thinks before each step when the request asks for thinking (Claude Code does): -thinking, or a list of off and on")
	matrix := fs.Bool("matrix", false, "every dimension not given takes all its values, and -runs defaults to 3")
	cells := fs.String("cells", "", "the cells to run, CLIENT/REGIME/STEPS/OUTPUTS/THINKING, comma-separated, instead of the cross product of the dimensions")
	arms := fs.String("arms", "direct,proxy", "the arms to run, in order: direct, proxy")
	fs.IntVar(&cfg.Runs, "runs", 1, "runs per cell (with -matrix, 3 unless given)")
	fs.IntVar(&cfg.Parallel, "parallel", 1, "runs at a time")
	fs.Float64Var(&cfg.ClockSpeed, "clock-speed", 60, "the session's clock runs this many times faster than the wall clock")
	fs.StringVar(&cfg.Bin, "bin", "", "agentctx binary (default: go build ./cmd/agentctx)")
	fs.BoolVar(&cfg.Verbose, "v", false, "print one line per model request: its usage and cost")
	fs.StringVar(&cfg.Dump, "dump", "", "write each model request's body into this directory (CLIENT-ARM-NNN.json), with -v")
	fs.DurationVar(&cfg.Timeout, "timeout", 45*time.Minute, "bound of one arm's client run")
	fs.StringVar(&cfg.ProxyLog, "proxy-log", "", "write each proxy arm's log into this directory (CLIENT-proxy.log)")
	fs.StringVar(&cfg.Trace, "trace", "", "record every request each arm's client sends into this directory (CLIENT-ARM/requests.jsonl and bodies)")
	fs.StringVar(&cfg.Out, "out", "", "write every run's numbers into this JSON file")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	all := *matrix
	var err error
	switch {
	case *client == "both" || all && !given["client"]:
		cfg.Clients = allClients
	default:
		cfg.Clients, err = oneOf("client", *client, allClients)
	}
	if err == nil {
		cfg.Regimes, err = oneOf("regime", pick(all && !given["regime"], strings.Join(allRegimes, ","), *regime), allRegimes)
	}
	if err == nil {
		cfg.Outputs, err = oneOf("outputs", pick(all && !given["outputs"], strings.Join(allOutputs, ","), *outputs), allOutputs)
	}
	if err == nil {
		cfg.Lengths, err = lengths(*steps)
		if all && !given["steps"] {
			cfg.Lengths = allLengths
		}
	}
	if err != nil {
		return config{}, err
	}
	cfg.Thinking = thinking.v
	if all && !given["thinking"] {
		cfg.Thinking = []bool{false, true}
	}
	if all && !given["runs"] {
		cfg.Runs = 3
	}
	if *cells != "" {
		for _, name := range strings.Split(*cells, ",") {
			c, err := parseCell(strings.TrimSpace(name))
			if err != nil {
				return config{}, err
			}
			cfg.Cells = append(cfg.Cells, c)
		}
	}
	if cfg.Arms, err = oneOf("arm", *arms, []string{"direct", "proxy"}); err != nil {
		return config{}, err
	}
	if cfg.Runs < 1 || cfg.Parallel < 1 {
		return config{}, fmt.Errorf("invalid -runs %d or -parallel %d", cfg.Runs, cfg.Parallel)
	}
	cfg.ProxyArgs = fs.Args()
	return cfg, nil
}

func pick(all bool, every, given string) string {
	if all {
		return every
	}
	return given
}

// oneOf splits a list flag and checks its values.
func oneOf(name, list string, valid []string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(valid, v) {
			return nil, fmt.Errorf("invalid -%s %q: want %s", name, v, strings.Join(valid, ", "))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

func lengths(list string) ([]int, error) {
	var out []int
	for _, v := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("invalid -steps %q: want positive numbers", v)
		}
		out = append(out, n)
	}
	return out, nil
}

// thinkingFlag is -thinking: a boolean flag (-thinking is on) that also
// takes a list of off and on.
type thinkingFlag struct{ v []bool }

func (f *thinkingFlag) IsBoolFlag() bool { return true }

func (f *thinkingFlag) String() string {
	if f == nil {
		return ""
	}
	var s []string
	for _, v := range f.v {
		s = append(s, onOff(v))
	}
	return strings.Join(s, ",")
}

func (f *thinkingFlag) Set(s string) error {
	f.v = nil
	for _, v := range strings.Split(s, ",") {
		switch strings.TrimSpace(v) {
		case "on", "true":
			f.v = append(f.v, true)
		case "off", "false":
			f.v = append(f.v, false)
		default:
			return fmt.Errorf("want on, off or a list of them, not %q", v)
		}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// config is a run of costsim.
type config struct {
	// The dimensions of the cells; Cells, when set, are the cells instead
	// of their cross product.
	Clients  []string // claude, codex
	Regimes  []string // warm, cold, ttl1h
	Lengths  []int    // steps
	Outputs  []string // small, large
	Thinking []bool
	Cells    []cell
	Runs     int
	Parallel int

	Arms       []string // direct, proxy
	ClockSpeed float64
	Bin        string
	Verbose    bool
	Dump       string
	ProxyLog   string
	Trace      string
	Out        string
	Timeout    time.Duration
	ProxyArgs  []string
	// ClientDir is the directory the clients are installed in.
	ClientDir string
}

// cell is one combination of the dimensions.
type cell struct {
	Client   string `json:"client"`
	Regime   string `json:"regime"`
	Steps    int    `json:"steps"`
	Outputs  string `json:"outputs"`
	Thinking bool   `json:"thinking"`
}

func (c cell) String() string {
	return fmt.Sprintf("%s/%s/%d/%s/%s", c.Client, c.Regime, c.Steps, c.Outputs, onOff(c.Thinking))
}

func parseCell(name string) (cell, error) {
	p := strings.Split(name, "/")
	bad := fmt.Errorf("invalid cell %q: want CLIENT/REGIME/STEPS/OUTPUTS/THINKING, as claude/warm/120/large/off", name)
	if len(p) != 5 || !slices.Contains(allClients, p[0]) || !slices.Contains(allRegimes, p[1]) || !slices.Contains(allOutputs, p[3]) || p[4] != "on" && p[4] != "off" {
		return cell{}, bad
	}
	n, err := strconv.Atoi(p[2])
	if err != nil || n < 1 {
		return cell{}, bad
	}
	return cell{Client: p[0], Regime: p[1], Steps: n, Outputs: p[3], Thinking: p[4] == "on"}, nil
}

// cells returns the cells of cfg, in order: Cells, or the cross product
// of the dimensions, where Codex's cells have thinking off (the model
// thinks on Anthropic requests only).
func (cfg config) cells() []cell {
	if len(cfg.Cells) > 0 {
		return cfg.Cells
	}
	var out []cell
	for _, cl := range cfg.Clients {
		for _, rg := range cfg.Regimes {
			for _, n := range cfg.Lengths {
				for _, o := range cfg.Outputs {
					for _, th := range cfg.Thinking {
						c := cell{Client: cl, Regime: rg, Steps: n, Outputs: o, Thinking: th && cl != "codex"}
						if !slices.Contains(out, c) {
							out = append(out, c)
						}
					}
				}
			}
		}
	}
	return out
}

// single reports one run of cells that differ by their client only (as
// -client both): the runs' table has a row per client and arm, and the
// outputs go straight into the -trace, -dump and -proxy-log directories
// (CLIENT-ARM...).
func (cfg config) single() bool {
	cells := cfg.cells()
	for _, c := range cells {
		c.Client = cells[0].Client
		if c != cells[0] {
			return false
		}
	}
	return cfg.Runs == 1
}

// runDir returns the directory of run (from 1) of cell c in dir (-trace,
// -dump, -proxy-log): dir itself for a single run, else dir/CELL/RUN.
func (cfg config) runDir(dir string, c cell, run int) string {
	if dir == "" || cfg.single() {
		return dir
	}
	return filepath.Join(dir, strings.ReplaceAll(c.String(), "/", "-"), strconv.Itoa(run))
}

// regime is how the session takes its time and asks for its cache.
type regime struct {
	// slowBuild is the session time of the slow build, one step in 12.
	slowBuild time.Duration
	// longCache: the client asks for the long cache lifetimes.
	longCache bool
}

func regimeOf(name string) regime {
	switch name {
	case "warm":
		return regime{slowBuild: time.Minute}
	case "ttl1h":
		return regime{slowBuild: fakeupstream.SlowBuildTime, longCache: true}
	}
	return regime{slowBuild: fakeupstream.SlowBuildTime}
}

// result is one arm's outcome.
type result struct {
	Cell cell                `json:"cell"`
	Run  int                 `json:"run"`
	Arm  string              `json:"arm"`
	Bill fakeupstream.Totals `json:"bill"`
	// Stats are what the model answered, ReadBacks included.
	Stats fakeupstream.LongTaskStats `json:"model"`
	// Final is the client's final answer; OK reports that it is the
	// task's correct answer (Want).
	Final string `json:"final"`
	Want  string `json:"want"`
	OK    bool   `json:"ok"`
	// Rewritten counts the requests the ttl1h stand-in changed;
	// RewriteFailed those it could not.
	Rewritten     int64 `json:"rewritten"`
	RewriteFailed int64 `json:"rewrite_failed"`
	// Wall is the client's run time; Session the session time it stands
	// for.
	Wall    time.Duration `json:"wall_ns"`
	Session time.Duration `json:"session_ns"`
	Err     error         `json:"-"`
	Error   string        `json:"error,omitempty"`
}

// run builds agentctx when needed and runs every cell's runs, -parallel
// at a time, each run's arms in turn; it logs progress to log. The
// results are in the order of the cells, runs and arms.
func run(ctx context.Context, cfg config, log io.Writer) ([]result, error) {
	if cfg.ClockSpeed <= 0 || cfg.Runs < 1 || cfg.Parallel < 1 {
		return nil, fmt.Errorf("invalid -clock-speed %g, -runs %d or -parallel %d", cfg.ClockSpeed, cfg.Runs, cfg.Parallel)
	}
	cells := cfg.cells()
	if err := checkClients(cfg, cells); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "costsim-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if cfg.Bin == "" && slices.Contains(cfg.Arms, "proxy") {
		cfg.Bin = filepath.Join(tmp, "agentctx")
		fmt.Fprintln(log, "costsim: building agentctx")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", cfg.Bin, "github.com/agentctx/agentctx/cmd/agentctx").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	byRun := runAll(ctx, cfg, cells, log)
	var (
		res  []result
		errs []error
	)
	for _, rs := range byRun {
		for _, r := range rs {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s run %d %s: %w", r.Cell, r.Run, r.Arm, r.Err))
			}
		}
		res = append(res, rs...)
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return res, errors.Join(errs...)
}

// checkClients checks that the clients of the cells are installed.
func checkClients(cfg config, cells []cell) error {
	for _, c := range cells {
		if c.Steps < 1 {
			return fmt.Errorf("invalid -steps %d", c.Steps)
		}
		argv := e2eclient.ClaudeCommand(cfg.ClientDir)
		if c.Client == "codex" {
			argv = e2eclient.CodexCommand(cfg.ClientDir)
		}
		if _, err := os.Stat(argv[len(argv)-1]); err != nil {
			return fmt.Errorf("%s is not installed in %s (go test ./bench/cmd/costsim installs it): %w", c.Client, cfg.ClientDir, err)
		}
	}
	return nil
}

// runAll runs every run of every cell, -parallel at a time, and returns
// each run's results (its arms), the runs of cell i at i×Runs.
func runAll(ctx context.Context, cfg config, cells []cell, log io.Writer) [][]result {
	type job struct{ cell, run int }
	jobs := make(chan job)
	out := make([][]result, len(cells)*cfg.Runs)
	var wg sync.WaitGroup
	for range min(cfg.Parallel, len(out)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// Each job writes its own element: no lock.
				out[j.cell*cfg.Runs+j.run-1] = runArms(ctx, cfg, cells[j.cell], j.run, log)
			}
		}()
	}
feed:
	for i := range cells {
		for n := 1; n <= cfg.Runs; n++ {
			select {
			case jobs <- job{i, n}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

// runArms runs one run of cell c: its arms in turn.
func runArms(ctx context.Context, cfg config, c cell, run int, log io.Writer) []result {
	var rs []result
	for _, arm := range cfg.Arms {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(log, "costsim: %s run %d %s: clock ×%g\n", c, run, arm, cfg.ClockSpeed)
		r := runArm(ctx, cfg, c, run, arm, log)
		fmt.Fprintf(log, "costsim: %s run %d %s: %d requests, $%.4f, %s wall (%s of session), %d read-backs, final answer %q\n",
			c, run, arm, r.Bill.Requests, r.Bill.USD, r.Wall.Round(time.Second), r.Session.Round(time.Minute), r.Stats.ReadBacks, r.Final)
		rs = append(rs, r)
	}
	return rs
}

// accelerated returns a clock that reads start at start and runs speed
// times faster than the wall clock (as agentctx proxy --clock-speed).
func accelerated(start time.Time, speed float64) func() time.Time {
	return func() time.Time { return start.Add(time.Duration(float64(time.Since(start)) * speed)) }
}

// armDirs are an arm's directories: the client's working directory and
// home, and the proxy's directory (its workspace is proxy/.agentctx), in
// tmp.
type armDirs struct{ tmp, work, home, proxy string }

func newArmDirs(cfg config, c cell, run int) (armDirs, error) {
	for _, d := range []string{cfg.runDir(cfg.Dump, c, run), cfg.runDir(cfg.ProxyLog, c, run)} {
		if d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return armDirs{}, err
			}
		}
	}
	tmp, err := os.MkdirTemp("", "costsim-arm-")
	if err != nil {
		return armDirs{}, err
	}
	a := armDirs{tmp: tmp, work: filepath.Join(tmp, "work"), home: filepath.Join(tmp, "home"), proxy: filepath.Join(tmp, "proxy")}
	for _, d := range []string{a.work, a.home, a.proxy} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			os.RemoveAll(tmp)
			return armDirs{}, err
		}
	}
	return a, nil
}

// runArm runs one client in one arm: a fresh working directory, fake and
// (proxy arm) proxy.
func runArm(ctx context.Context, cfg config, c cell, run int, arm string, log io.Writer) (r result) {
	r = result{Cell: c, Run: run, Arm: arm}
	defer func() {
		if r.Err != nil {
			r.Error = r.Err.Error()
		}
	}()
	prefix := c.Client + "/" + arm
	if !cfg.single() {
		prefix = fmt.Sprintf("%s#%d/%s", c, run, arm)
	}
	dirs, err := newArmDirs(cfg, c, run)
	if err != nil {
		r.Err = err
		return r
	}
	defer os.RemoveAll(dirs.tmp)
	rg := regimeOf(c.Regime)
	start := time.Now()
	clock := accelerated(start, cfg.ClockSpeed)
	model := fakeupstream.NewLongTask(fakeupstream.LongTaskOptions{Steps: c.Steps, Dir: dirs.work,
		ClockSpeed: cfg.ClockSpeed, SummaryHeader: proxy.HeaderSummary, SummaryTitle: compact.SummaryTitle, Thinking: c.Thinking,
		SlowBuild: rg.slowBuild, SmallOutputs: c.Outputs == "small", Chained: true, PathRoots: []string{dirs.proxy}})
	if err := model.WriteFiles(); err != nil {
		r.Err = err
		return r
	}
	r.Want = model.CorrectAnswer()
	fake := fakeupstream.New(fakeupstream.Options{Script: model.Script, Now: clock})
	var h http.Handler = fake
	if cfg.Verbose {
		h = &perRequest{fake: fake, start: start, clock: clock, w: log, prefix: prefix, dump: cfg.runDir(cfg.Dump, c, run)}
	}
	env, err := startArm(ctx, cfg, c, run, arm, dirs, h, clock, log)
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		t0 := time.Now()
		if c.Client == "claude" {
			r.Final, err = runClaude(actx, cfg, rg, dirs.work, dirs.home, env.base)
		} else {
			r.Final, err = runCodex(actx, cfg, dirs.work, dirs.home, env.base)
		}
		cancel()
		r.Wall = time.Since(t0)
	}
	if serr := env.stop(log, err != nil); serr != nil && err == nil {
		err = serr
	}
	r.Session = time.Duration(float64(r.Wall) * cfg.ClockSpeed)
	r.Bill, r.Stats = fake.Bill().Totals, model.Stats()
	if env.front != nil {
		r.Rewritten, r.RewriteFailed = env.front.rewritten.Load(), env.front.failed.Load()
	}
	r.OK = err == nil && strings.Contains(r.Final, r.Want)
	switch {
	case err != nil:
		r.Err = err
	case !r.OK:
		r.Err = fmt.Errorf("the final answer %q is not %q (the model reached step %d, %d steps without their value)", r.Final, r.Want, r.Stats.LastStep, r.Stats.ChainMisses)
	}
	for _, rec := range fake.Records() {
		if rec.Rejected != "" {
			fmt.Fprintf(log, "costsim: %s: the fake rejected a request of %d bytes: %s\n", prefix, rec.Size, rec.Rejected)
		}
	}
	return r
}

// armEnv is what an arm's client talks to: the fake, the proxy (proxy
// arm) and the front (with a trace or the ttl1h regime), served.
type armEnv struct {
	base  string // the client's base URL
	front *front // nil without one
	// stops end what was started, the last first.
	stops []func(log io.Writer, failed bool) error
}

// stop ends what the arm started, and returns the first error (of the
// trace).
func (e *armEnv) stop(log io.Writer, failed bool) error {
	var first error
	for i := len(e.stops) - 1; i >= 0; i-- {
		if err := e.stops[i](log, failed); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// startArm serves fake, starts the proxy in front of it for the proxy
// arm, and the front before them when the run records a trace or the
// regime asks for long cache lifetimes. On an error it has stopped what
// it started.
func startArm(ctx context.Context, cfg config, c cell, run int, arm string, dirs armDirs, fake http.Handler, clock func() time.Time, log io.Writer) (*armEnv, error) {
	env := &armEnv{}
	fail := func(err error) (*armEnv, error) {
		env.stop(log, true)
		env.stops = nil
		return env, err
	}
	base, stop, err := serve(fake)
	if err != nil {
		return fail(err)
	}
	env.stops = append(env.stops, func(io.Writer, bool) error { stop(); return nil })
	var endpoint http.Handler = fake
	if arm == "proxy" {
		p, err := startProxy(ctx, cfg, dirs.proxy, dirs.home, base)
		if err != nil {
			return fail(err)
		}
		env.stops = append(env.stops, func(log io.Writer, failed bool) error {
			p.stop(log, failed)
			if d := cfg.runDir(cfg.ProxyLog, c, run); d != "" {
				return os.WriteFile(filepath.Join(d, c.Client+"-proxy.log"), []byte(p.log.String()), 0o644)
			}
			return nil
		})
		u, err := url.Parse(p.base)
		if err != nil {
			return fail(err)
		}
		base = p.base
		endpoint = &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, FlushInterval: -1}
	}
	rg := regimeOf(c.Regime)
	if cfg.Trace == "" && !rg.longCache {
		env.base = base
		return env, nil
	}
	env.front = &front{next: endpoint, longCache: rg.longCache}
	if cfg.Trace != "" {
		tw, err := newTraceWriter(filepath.Join(cfg.runDir(cfg.Trace, c, run), c.Client+"-"+arm), clock)
		if err != nil {
			return fail(err)
		}
		m := traceMeta{ClientDir: dirs.work, ClockSpeed: cfg.ClockSpeed, SlowBuild: regimeOf(c.Regime).slowBuild.String()}
		if arm == "proxy" {
			// The proxy's directories: the paths of its references,
			// which the model reads back, lie under its workspace
			// (tracereplay keeps its own there).
			m.ProxyDir, m.Workspace = dirs.proxy, proxyWorkspace(cfg.ProxyArgs, dirs.proxy, proxyEnv(dirs.home))
		}
		if err := tw.writeMeta(m); err != nil {
			return fail(err)
		}
		env.front.trace = tw
		env.stops = append(env.stops, func(io.Writer, bool) error {
			if err := tw.Close(); err != nil {
				return fmt.Errorf("trace: %w", err)
			}
			return nil
		})
	}
	fb, stopFront, err := serve(env.front)
	if err != nil {
		return fail(err)
	}
	env.stops = append(env.stops, func(io.Writer, bool) error { stopFront(); return nil })
	env.base = fb
	return env, nil
}

// serve serves h on a free loopback port and returns its base URL and a
// func that stops it.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// proxyProc is a running agentctx proxy.
type proxyProc struct {
	cmd  *exec.Cmd
	base string
	log  *e2eclient.SyncBuffer
}

// proxyEnv is the environment of an arm's proxy, whose home is home.
func proxyEnv(home string) []string { return append(e2eclient.MinimalEnv(), "HOME="+home) }

// proxyWorkspace returns the workspace directory of `agentctx proxy
// args` run in dir with the environment env: the last --workspace of
// args, else the default of the project dir (projectws.Default, as the
// command finds it); "" when args name a --store.
func proxyWorkspace(args []string, dir string, env []string) string {
	ws := ""
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--workspace=")
		if a == "--workspace" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			ws = v
		}
		if a == "--store" || strings.HasPrefix(a, "--store=") {
			return ""
		}
	}
	if ws != "" {
		if !filepath.IsAbs(ws) {
			ws = filepath.Join(dir, ws)
		}
		return ws
	}
	project, err := projectws.Project(dir)
	if err != nil {
		project = dir
	}
	lookup := func(k string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	return projectws.Default(project, lookup, runtime.GOOS)
}

// startProxy runs `agentctx proxy` in dir (its workspace dir/.agentctx)
// with the simulated clock, in front of upstream.
func startProxy(ctx context.Context, cfg config, dir, home, upstream string) (*proxyProc, error) {
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream-anthropic", upstream, "--upstream-openai", upstream,
		"--clock-speed", fmt.Sprint(cfg.ClockSpeed)}, cfg.ProxyArgs...)
	cmd := exec.Command(cfg.Bin, args...)
	cmd.Dir = dir
	cmd.Env = proxyEnv(home)
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
const prompt = "Run the long maintenance task: one tool call per step, as the steps come. Each step's output prints the value " +
	"the next step needs (chain step N NEXT=VALUE), and three early steps print KEEP1, KEEP2 and KEEP3, to be quoted at the end. " +
	"Then report the final check exactly as LONGTASK COMPLETE steps=N check=VALUE keep=KEEP1,KEEP2,KEEP3."

func runClaude(ctx context.Context, cfg config, rg regime, work, home, base string) (string, error) {
	argv := append(e2eclient.ClaudeCommand(cfg.ClientDir), "-p", prompt, "--model", claudeModel,
		"--allowedTools", "Bash Read", "--output-format", "json")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+home, "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	if rg.longCache {
		cmd.Env = append(cmd.Env, "ENABLE_PROMPT_CACHING_1H=1") // Claude Code's own setting
	}
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
