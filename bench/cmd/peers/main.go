// Command peers compares agentctx's token counter with the JavaScript
// tokenizers on the same text, in one run, and prints Markdown tables with
// tokens/s, MB/s, the counts (which must all agree) and the ratio of
// agentctx's throughput to each peer's.
//
// Use bench/peers.sh, which installs the JavaScript packages and pins
// everything to one CPU core. Directly:
//
//	go run ./bench/cmd/peers [-text FILE] [-rounds 5] [-seconds 1] [-encodings o200k_base,cl100k_base]
//
// Without -text it uses the 1 MiB text of package bench/mixtext. Every
// tokenizer counts the whole text once per run. The tokenizers take turns:
// in each of -rounds rounds, each one runs for -seconds (at least three
// runs), so a machine that gets busier or quieter during the benchmark
// affects all of them alike. Reported are the median run over all rounds, by
// wall-clock time and by CPU time (this process's thread for agentctx, the
// node process for the others), and the best run.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/bench/mixtext"
	"github.com/agentctx/agentctx/tokens"
)

// tokenizer is one tokenizer's results; the JSON names are those
// bench/js/peers.mjs prints.
type tokenizer struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Tokens  int       `json:"tokens"`
	LoadMs  float64   `json:"load_ms"`
	wall    []float64 // ms per run
	cpu     []float64 // ms per run
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	textFile := fs.String("text", "", "text file to count (default: the 1 MiB text of bench/mixtext, written to bench/out/mixed.txt)")
	rounds := fs.Int("rounds", 5, "rounds; in each, every tokenizer runs for -seconds")
	seconds := fs.Float64("seconds", 1, "seconds per tokenizer per round")
	encs := fs.String("encodings", "o200k_base,cl100k_base", "comma-separated encodings")
	jsDir := fs.String("js", "bench/js", "directory of peers.mjs and its node_modules")
	node := fs.String("node", "node", "node binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *textFile == "" {
		*textFile = filepath.Join("bench", "out", "mixed.txt")
		if err := os.MkdirAll(filepath.Dir(*textFile), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*textFile, []byte(mixtext.Build(mixtext.DefaultSize)), 0o644); err != nil {
			return err
		}
	}
	abs, err := filepath.Abs(*textFile)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(abs)
	if err != nil {
		return err
	}
	text := string(raw)
	fmt.Fprintf(stdout, "text: %s, %d bytes; %d rounds of %gs per tokenizer; GOMAXPROCS=%d, %s\n\n",
		*textFile, len(text), *rounds, *seconds, runtime.GOMAXPROCS(0), runtime.Version())

	// Counting runs on a locked thread, so that the thread's CPU time is
	// agentctx's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, name := range strings.Split(*encs, ",") {
		if err := compare(name, text, abs, *rounds, *seconds, *node, *jsDir, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

func compare(name, text, file string, rounds int, seconds float64, node, jsDir string, stdout, stderr io.Writer) error {
	start := time.Now()
	enc, err := tokens.Get(name)
	if err != nil {
		return err
	}
	ours := &tokenizer{Name: "agentctx", Version: "(this repo)", LoadMs: ms(time.Since(start))}
	ours.Tokens = enc.Count(text)
	for warm := time.Now(); time.Since(warm) < time.Second; {
		enc.Count(text)
	}

	fmt.Fprintf(stderr, "%s: starting %s peers.mjs ...\n", name, node)
	cmd := exec.Command(node, "peers.mjs", name, file)
	cmd.Dir = jsDir
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()
	defer in.Close()
	out := bufio.NewScanner(outPipe)
	out.Buffer(nil, 64<<20)
	var peers []*tokenizer
	for len(peers) < 4 && out.Scan() {
		p := new(tokenizer)
		if err := json.Unmarshal(out.Bytes(), p); err != nil {
			return fmt.Errorf("peers.mjs: %q: %w", out.Text(), err)
		}
		peers = append(peers, p)
	}
	if len(peers) < 4 {
		return fmt.Errorf("peers.mjs ended early: %v", out.Err())
	}

	for r := 0; r < rounds; r++ {
		fmt.Fprintf(stderr, "%s: round %d/%d\n", name, r+1, rounds)
		measure(ours, enc, text, seconds)
		for _, p := range peers {
			if _, err := fmt.Fprintf(in, "%s %g\n", p.Name, seconds); err != nil {
				return err
			}
			if !out.Scan() {
				return fmt.Errorf("peers.mjs: no answer for %s: %v", p.Name, out.Err())
			}
			var res struct{ Runs [][2]float64 }
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				return fmt.Errorf("peers.mjs: %q: %w", out.Text(), err)
			}
			for _, run := range res.Runs {
				p.wall = append(p.wall, run[0])
				p.cpu = append(p.cpu, run[1])
			}
		}
	}
	report(stdout, name, len(text), ours, peers)
	return nil
}

// measure counts text with enc for seconds (at least three times).
func measure(t *tokenizer, enc *tokens.Encoding, text string, seconds float64) {
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for n := 0; n < 3 || time.Now().Before(end); n++ {
		c0, _ := threadCPU()
		t0 := time.Now()
		enc.Count(text)
		wall := time.Since(t0)
		c1, _ := threadCPU()
		t.wall = append(t.wall, ms(wall))
		t.cpu = append(t.cpu, ms(c1-c0))
	}
}

func report(w io.Writer, encoding string, size int, ours *tokenizer, peers []*tokenizer) {
	_, cpuOK := threadCPU()
	fmt.Fprintf(w, "### %s\n\n", encoding)
	fmt.Fprintln(w, "| tokenizer | version | tokens | load ms | runs | median ms (wall) | best ms | tokens/s (wall) | MB/s (wall) | median ms (CPU) | tokens/s (CPU) | agentctx is (wall / CPU) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	rate := func(t *tokenizer, xs []float64) float64 { return float64(t.Tokens) / (median(xs) / 1e3) }
	row := func(t *tokenizer, ratio string) {
		cpuMs, cpuRate := "n/a", "n/a"
		if cpuOK || t != ours {
			cpuMs, cpuRate = fmt.Sprintf("%.1f", median(t.cpu)), fmt.Sprintf("%.2fM", rate(t, t.cpu)/1e6)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.1f | %d | %.1f | %.1f | %.2fM | %.1f | %s | %s | %s |\n",
			t.Name, t.Version, t.Tokens, t.LoadMs, len(t.wall), median(t.wall), slices.Min(t.wall),
			rate(t, t.wall)/1e6, float64(size)/1e6/(median(t.wall)/1e3), cpuMs, cpuRate, ratio)
	}
	row(ours, "")
	var fastest *tokenizer
	for _, p := range peers {
		ratio := fmt.Sprintf("%.1f×", rate(ours, ours.wall)/rate(p, p.wall))
		if cpuOK {
			ratio += fmt.Sprintf(" / %.1f×", rate(ours, ours.cpu)/rate(p, p.cpu))
		}
		row(p, ratio)
		if fastest == nil || rate(p, p.wall) > rate(fastest, fastest.wall) {
			fastest = p
		}
	}
	fmt.Fprintln(w)
	for _, p := range peers {
		if p.Tokens != ours.Tokens {
			fmt.Fprintf(w, "**count mismatch**: %s counts %d tokens, agentctx %d\n\n", p.Name, p.Tokens, ours.Tokens)
		}
	}
	fmt.Fprintf(w, "agentctx / fastest peer (%s): %.2f× by median wall time", fastest.Name, rate(ours, ours.wall)/rate(fastest, fastest.wall))
	if cpuOK {
		fmt.Fprintf(w, ", %.2f× by median CPU time", rate(ours, ours.cpu)/rate(fastest, fastest.cpu))
	}
	fmt.Fprint(w, "\n\n")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
