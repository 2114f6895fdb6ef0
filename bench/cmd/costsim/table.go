package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/internal/base/textfmt"
)

// runKey names one run of one cell.
type runKey struct {
	cell cell
	run  int
}

// printTable prints the results as markdown: a row per arm of each run,
// then, for more than one run, a row per cell (summarize).
func printTable(w io.Writer, cfg config, res []result) {
	if len(res) == 0 {
		return
	}
	cells := cfg.cells()
	if cfg.single() {
		c := cells[0]
		fmt.Fprintf(w, "\n%d steps, regime %s, outputs %s, clock ×%g", c.Steps, c.Regime, c.Outputs, cfg.ClockSpeed)
		if c.Thinking {
			fmt.Fprint(w, ", thinking")
		}
	} else {
		fmt.Fprintf(w, "\n%d cells × %d runs, clock ×%g", len(cells), cfg.Runs, cfg.ClockSpeed)
	}
	if len(cfg.ProxyArgs) > 0 {
		fmt.Fprintf(w, ", proxy flags %q", cfg.ProxyArgs)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	first := "| client | arm |"
	if !cfg.single() {
		first = "| cell | run | arm |"
	}
	fmt.Fprintln(w, first+" requests | input | cache read | cache write 5m / 1h | output | bill USD | × direct | largest request | rejections | summaries client / proxy | read-backs | final answer | wall / session |")
	fmt.Fprintln(w, "|---|---|"+map[bool]string{true: "", false: "--:|"}[cfg.single()]+"--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|")
	direct := map[runKey]float64{}
	for _, r := range res {
		if r.Arm == "direct" {
			direct[runKey{r.Cell, r.Run}] = r.Bill.USD
		}
	}
	for _, r := range res {
		ratio := "—"
		if d, ok := direct[runKey{r.Cell, r.Run}]; ok && d > 0 {
			ratio = fmt.Sprintf("%.2f×", r.Bill.USD/d)
		}
		b := r.Bill
		lead := fmt.Sprintf("| %s | %s |", r.Cell.Client, r.Arm)
		if !cfg.single() {
			lead = fmt.Sprintf("| %s | %d | %s |", r.Cell, r.Run, r.Arm)
		}
		fmt.Fprintf(w, "%s %d | %s | %s | %s / %s | %s | %.4f | %s | %s | %d | %d / %d | %d | %s | %s / %s |\n",
			lead, b.Requests, textfmt.Thousands(b.Input), textfmt.Thousands(b.CacheRead), textfmt.Thousands(b.CacheWrite), textfmt.Thousands(b.CacheWrite1h), textfmt.Thousands(b.Output),
			b.USD, ratio, textfmt.Thousands(b.LargestRequest), b.Rejections, r.Stats.ClientSummaries, r.Stats.ProxySummaries, r.Stats.ReadBacks, answer(r),
			r.Wall.Round(time.Second), hm(r.Session))
	}
	notes := false
	note := func(format string, args ...any) {
		if !notes {
			fmt.Fprintln(w)
			notes = true
		}
		fmt.Fprintf(w, format+"\n", args...)
	}
	for _, r := range res {
		name := r.Cell.Client + " " + r.Arm
		if !cfg.single() {
			name = fmt.Sprintf("%s run %d %s", r.Cell, r.Run, r.Arm)
		}
		if r.Cell.Thinking {
			note("thinking, %s: %d blocks received, %d invalid, drop_block on %d of %d requests",
				name, r.Bill.ThinkingBlocks, r.Bill.InvalidThinking, r.Bill.DropBlockRequests, r.Bill.Requests)
		}
		if r.Cell.Regime == "ttl1h" {
			note("ttl1h, %s: the stand-in rewrote %d requests (%d it could not)", name, r.Rewritten, r.RewriteFailed)
		}
		if r.Stats.ChainMisses > 0 {
			note("%s: %d steps ran without the value the previous step printed", name, r.Stats.ChainMisses)
		}
	}
	if !cfg.single() {
		summarize(w, cells, res)
	}
}

// answer is the final answer column: correct, WRONG, or FAILED (the run
// ended in an error before answering).
func answer(r result) string {
	switch {
	case r.OK:
		return "correct"
	case r.Final == "" && r.Err != nil:
		return "FAILED"
	}
	return "WRONG"
}

// cellSummary is what summarize prints of one cell.
type cellSummary struct {
	direct, proxy, ratios []float64
	// By arm: direct, proxy.
	arms, rejected, correct [2]int
	readBacks               [2][]float64
}

// summarize prints one row per cell: the median bill of each arm, the
// median ratio and its spread, the rejected requests, the correct answers
// and the median read-back turns of each arm.
func summarize(w io.Writer, cells []cell, res []result) {
	by := map[cell]*cellSummary{}
	bills := map[runKey][2]float64{}
	seen := map[runKey][2]bool{}
	for _, r := range res {
		s := by[r.Cell]
		if s == nil {
			s = &cellSummary{}
			by[r.Cell] = s
		}
		a := 0
		if r.Arm == "proxy" {
			a = 1
		}
		s.arms[a]++
		s.rejected[a] += r.Bill.Rejections
		if r.OK {
			s.correct[a]++
		}
		s.readBacks[a] = append(s.readBacks[a], float64(r.Stats.ReadBacks))
		if a == 0 {
			s.direct = append(s.direct, r.Bill.USD)
		} else {
			s.proxy = append(s.proxy, r.Bill.USD)
		}
		k := runKey{r.Cell, r.Run}
		b, ok := bills[k], seen[k]
		b[a], ok[a] = r.Bill.USD, true
		bills[k], seen[k] = b, ok
	}
	for k, ok := range seen {
		if ok[0] && ok[1] && bills[k][0] > 0 {
			by[k.cell].ratios = append(by[k.cell].ratios, bills[k][1]/bills[k][0])
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| cell | runs | direct USD (median) | proxy USD (median) | × direct (median) | spread | rejected direct / proxy | correct direct / proxy | read-backs direct / proxy (median) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|---|--:|--:|--:|")
	for _, c := range cells {
		s := by[c]
		if s == nil {
			continue
		}
		ratio, spread := "—", "—"
		if len(s.ratios) > 0 {
			ratio = fmt.Sprintf("%.2f×", median(s.ratios))
			spread = fmt.Sprintf("%.2f–%.2f", slices.Min(s.ratios), slices.Max(s.ratios))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %d / %d | %d/%d / %d/%d | %s / %s |\n",
			c, max(s.arms[0], s.arms[1]), usd(s.direct), usd(s.proxy), ratio, spread,
			s.rejected[0], s.rejected[1], s.correct[0], s.arms[0], s.correct[1], s.arms[1],
			num(s.readBacks[0]), num(s.readBacks[1]))
	}
}

func usd(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.4f", median(v))
}

func num(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", median(v)), ".0")
}

// median returns the median of v (the mean of the middle two for an even
// count); v is not modified.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func hm(d time.Duration) string {
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// report is the -out file: the command line's settings and every arm of
// every run, with its full numbers.
type report struct {
	ClockSpeed float64  `json:"clock_speed"`
	Arms       []string `json:"arms"`
	Runs       int      `json:"runs_per_cell"`
	ProxyArgs  []string `json:"proxy_args"`
	Cells      []cell   `json:"cells"`
	Results    []result `json:"results"`
}

// writeJSON writes the report into file, atomically (a temporary file
// renamed).
func writeJSON(file string, cfg config, res []result) error {
	b, err := json.MarshalIndent(report{ClockSpeed: cfg.ClockSpeed, Arms: cfg.Arms, Runs: cfg.Runs, ProxyArgs: cfg.ProxyArgs,
		Cells: cfg.cells(), Results: res}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".costsim-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
