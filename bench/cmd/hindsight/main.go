// Command hindsight replays a recorded client session (a costsim trace)
// through `agentctx proxy` under a grid of policies and prints the bill of
// each, cheapest first: the hindsight bound of issue 45 is the cheapest.
//
//	go run ./bench/cmd/hindsight -trace DIR -steps 120 [-small] [-thinking] [-grid 'ARGS;ARGS;...'] [-- common proxy flags]
//
// Without -grid it replays the grid of clearing age × batch size ×
// compaction point (see defaultGrid) and the proxy's defaults. The
// replayed proxy works in the recorded proxy's directories and its
// client's (the trace's meta.json), so that the references it sends, and
// the reads of them the client's requests hold, are the recorded ones. With
// -log, the proxy flag -v logs its debug detail (the plan of each request).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentctx/agentctx/bench/internal/tracereplay"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

func main() {
	dir := flag.String("trace", "", "the trace directory (requests.jsonl and bodies)")
	steps := flag.Int("steps", 120, "the recorded task's steps")
	thinking := flag.Bool("thinking", false, "the recorded task ran with thinking")
	small := flag.Bool("small", false, "the recorded task had small outputs (costsim -outputs small)")
	chained := flag.Bool("chained", true, "the recorded task was chained (costsim's)")
	proxyDir := flag.String("proxy-dir", "", "the recorded proxy's directory (default: the trace's meta.json)")
	workspace := flag.String("workspace", "", "the recorded proxy's workspace directory (default: the trace's meta.json, else .agentctx in -proxy-dir; its references' paths are under it)")
	clientDir := flag.String("client-dir", "", "the recorded client's working directory (default: the trace's meta.json; the model's file reads name paths under it)")
	clockSpeed := flag.Float64("clock-speed", 0, "the recorded task's clock speed (default: the trace's meta.json; its commands' sleeps are written with it)")
	slowBuild := flag.Duration("slow-build", 0, "the recorded task's slow build (default: the trace's meta.json, else fakeupstream.SlowBuildTime)")
	summary := flag.Int("summary-tokens", 0, "the size of the model's summaries (0: fakeupstream.DefaultSummaryTokens, as costsim's)")
	grid := flag.String("grid", "", "policies to replay, ';' between them, each a list of proxy flags ('-' alone: the defaults only; unset: the default grid and the defaults)")
	verbose := flag.Bool("v", false, "print the usage of each request of each policy")
	logFile := flag.String("log", "", "append the proxy's log of each policy to this file")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "hindsight: -trace is required")
		os.Exit(2)
	}
	reqs, err := tracereplay.Read(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hindsight:", err)
		os.Exit(1)
	}
	meta, err := tracereplay.ReadMeta(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hindsight:", err)
		os.Exit(1)
	}
	if *proxyDir == "" {
		*proxyDir = meta.ProxyDir
	}
	if *workspace == "" {
		*workspace = meta.Workspace
	}
	if *clientDir == "" {
		*clientDir = meta.ClientDir
	}
	if *clockSpeed == 0 {
		*clockSpeed = meta.ClockSpeed
	}
	if *slowBuild == 0 {
		*slowBuild = time.Duration(meta.SlowBuild)
	}
	policies := defaultGrid()
	switch *grid {
	case "":
	case "-":
		policies = []string{""}
	default:
		policies = strings.Split(*grid, ";")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	task := fakeupstream.LongTaskOptions{Steps: *steps, Thinking: *thinking, SmallOutputs: *small, Chained: *chained, SummaryTokens: *summary, Dir: *clientDir,
		ClockSpeed: *clockSpeed, SlowBuild: *slowBuild}
	rows := replayAll(ctx, reqs, policies, task, dirs{proxy: *proxyDir, workspace: *workspace}, *logFile, *verbose)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].res.Bill.USD < rows[j].res.Bill.USD })
	fmt.Println("| policy | bill USD | cache read | cache write | input | output | proxy summaries |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		b := r.res.Bill
		fmt.Printf("| `%s` | %.4f | %d | %d | %d | %d | %d |\n", r.policy, b.USD, b.CacheRead, b.CacheWrite, b.Input, b.Output, r.res.Stats.ProxySummaries)
	}
}

// row is one policy's replay.
type row struct {
	policy string
	res    tracereplay.Result
}

// dirs are the recorded proxy's directories a replay works in.
type dirs struct{ proxy, workspace string }

// replayAll replays reqs under each policy (with the common proxy flags
// after --) and returns their bills, in order; it exits on an error.
func replayAll(ctx context.Context, reqs []tracereplay.Request, policies []string, task fakeupstream.LongTaskOptions, d dirs, logFile string, verbose bool) []row {
	var logw io.Writer
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hindsight:", err)
			os.Exit(1)
		}
		defer f.Close()
		logw = f
	}
	var rows []row
	for _, p := range policies {
		args := append(strings.Fields(p), flag.Args()...)
		if logw != nil {
			fmt.Fprintf(logw, "=== policy %q\n", p)
		}
		res, err := tracereplay.Run(ctx, reqs, tracereplay.Options{ProxyArgs: args, Log: logw, Task: task, ProxyDir: d.proxy, Workspace: d.workspace})
		if err != nil {
			fmt.Fprintf(os.Stderr, "hindsight: %q: %v\n", p, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "%-60q $%.4f read=%d write=%d in=%d out=%d summaries=%d\n", p, res.Bill.USD, res.Bill.CacheRead, res.Bill.CacheWrite, res.Bill.Input, res.Bill.Output, res.Stats.ProxySummaries)
		if verbose {
			for i, u := range res.PerRequest {
				fmt.Fprintf(os.Stderr, "  #%d in=%d read=%d write=%d out=%d usd=%.4f\n", i+1, u.Input, u.CacheRead, u.CacheWrite, u.Output, u.USD)
			}
		}
		rows = append(rows, row{p, res})
		if ctx.Err() != nil {
			break
		}
	}
	return rows
}

// defaultGrid is the grid of the hindsight bound: clearing age × batch
// size × compaction point, with batched clearing (the batch the size
// given, at any size of the request), and the proxy's defaults.
func defaultGrid() []string {
	g := []string{""}
	for _, age := range []string{"2m", "5m", "10m", "15m", "1000h"} {
		for _, batch := range []string{"10000", "30000", "60000"} {
			for _, thr := range []string{"0.35", "0.5", "0.7", "0.92"} {
				if age == "1000h" && batch != "10000" {
					continue // nothing is ever stale: the batch size does nothing
				}
				g = append(g, fmt.Sprintf("--clearing batched --clear-trigger -1 --max-age %s --clear-at-least %s --threshold %s", age, batch, thr))
			}
		}
	}
	return g
}
