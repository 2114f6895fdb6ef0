package fakeupstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LongTask is a scripted model that drives a real client through a long
// task, for cost simulations (issue 22): Steps tool steps whose outputs
// are realistic and sized 2,000 to 60,000 characters in a fixed mix (test
// and build logs, grep results, heads of files, whole file reads), then a
// final answer. The files the steps read are written beforehand by
// WriteLongTaskFiles into the client's working directory. With a
// simulated clock (LongTaskOptions.ClockSpeed) the model takes its time to
// answer and the tests and builds take theirs, as in a real session.
//
// The model decides its next step from the request it receives only: the
// highest step marker ("lt-step-NNN", which every step's assistant text
// carries) anywhere in the request is the last step done. So it survives
// any compaction whose summary keeps the marker of the last step: it
// answers the summary requests it recognizes (the proxy's, marked with
// SummaryHeader, and the clients' own: Claude Code's and Codex's
// compaction prompts in the request's last user message) with a summary
// that states the last step reached.
//
// The final answer is "LONGTASK COMPLETE steps=N check=VALUE", where VALUE
// is the FINAL_CHECK the last step's output carries (LongTaskAnswer); a
// request without that output gets "check=missing".
type LongTask struct {
	opts LongTaskOptions

	mu    sync.Mutex
	stats LongTaskStats
}

// LongTaskOptions configure a LongTask. The zero value runs 120 steps.
type LongTaskOptions struct {
	// Steps is the number of tool steps; 0 means 120.
	Steps int
	// Dir is the client's working directory, where WriteLongTaskFiles
	// wrote the files: a file tool (Claude Code's Read) gets absolute
	// paths under it. Shell commands use relative paths.
	Dir string
	// ClockSpeed, when more than 0, makes the task take time as a real
	// session does, on a clock that runs ClockSpeed times faster than the
	// wall clock: the model answers after its latency (ModelLatency of
	// its output, divided by ClockSpeed), and a step's command sleeps its
	// tool's time (Step.Duration, divided by ClockSpeed) before printing.
	// 0 means no delays.
	ClockSpeed float64
	// Thinking makes each step's answer (and the final one) to an
	// Anthropic request with thinking on (a "thinking" of type enabled or
	// adaptive) start with a signed thinking block of about 100 tokens, as
	// Claude's do; without it the model never thinks, whatever the client
	// asks.
	Thinking bool
	// SummaryHeader marks a summary request of agentctx's proxy; "" means
	// DefaultSummaryHeader.
	SummaryHeader string
	// SummaryTitle starts every summary the model writes (the proxy's
	// compact.SummaryTitle, say); "" means none.
	SummaryTitle string
}

// LongTaskStats count what the model answered.
type LongTaskStats struct {
	// Requests counts the requests the model answered; Steps the tool
	// steps it asked for (a step asked twice counts twice).
	Requests, Steps int
	// LastStep is the highest step asked for.
	LastStep int
	// ProxySummaries and ClientSummaries count the summary requests of
	// the proxy and of the client.
	ProxySummaries, ClientSummaries int
	// Other counts the requests that were neither a step nor a summary
	// (titles, checks without the tools): answered "ok".
	Other int
	// Answer is the final answer ("" before it).
	Answer string
}

// The texts that start a client's own compaction request: Claude Code's
// and Codex's.
var clientSummaryPrompts = []string{
	"Your task is to create a detailed summary of the conversation so far",
	"CONTEXT CHECKPOINT COMPACTION",
}

// NewLongTask returns a LongTask model.
func NewLongTask(opts LongTaskOptions) *LongTask {
	if opts.Steps <= 0 {
		opts.Steps = 120
	}
	if opts.SummaryHeader == "" {
		opts.SummaryHeader = DefaultSummaryHeader
	}
	return &LongTask{opts: opts}
}

// Stats returns what the model answered so far.
func (m *LongTask) Stats() LongTaskStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

var (
	stepMarker = regexp.MustCompile(`lt-step-([0-9]{3,})`)
	finalCheck = regexp.MustCompile(`FINAL_CHECK=([0-9a-f]{16})`)
)

// lastStep returns the highest step marker in raw, or 0.
func lastStep(raw []byte) int {
	n := 0
	for _, g := range stepMarker.FindAllSubmatch(raw, -1) {
		if v, err := strconv.Atoi(string(g[1])); err == nil && v > n {
			n = v
		}
	}
	return n
}

// Marker returns the marker of step i.
func Marker(i int) string { return fmt.Sprintf("lt-step-%03d", i) }

// LongTaskAnswer returns the correct final answer of a task of steps
// steps.
func LongTaskAnswer(steps int) string {
	return fmt.Sprintf("LONGTASK COMPLETE steps=%d check=%s", steps, longTaskCheck(steps))
}

func longTaskCheck(steps int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("longtask-%d", steps)))
	return hex.EncodeToString(h[:8])
}

// Script answers the requests; use it as Options.Script.
func (m *LongTask) Script(c *Call) Reply {
	r := m.reply(c)
	if m.opts.ClockSpeed > 0 {
		time.Sleep(time.Duration(float64(ModelLatency(outputTokens(r))) / m.opts.ClockSpeed))
	}
	return r
}

// ModelLatency is how long the model takes to answer with out output
// tokens: 2 seconds to the first token, then 50 tokens a second.
func ModelLatency(out int) time.Duration {
	return 2*time.Second + time.Duration(out)*time.Second/50
}

func (m *LongTask) reply(c *Call) Reply {
	r := m.answer(c)
	if m.opts.Thinking && c.API == APIAnthropic && (len(r.ToolCalls) > 0 || strings.HasPrefix(r.Text, "LONGTASK COMPLETE")) {
		switch asMap(c.Body["thinking"])["type"] {
		case "enabled", "adaptive":
			r.Thinking = thinkingText(m.Stats().LastStep, m.opts.Steps)
		}
	}
	return r
}

// thinkingText is the model's reasoning before its answer after step last.
func thinkingText(last, steps int) string {
	return fmt.Sprintf("The last step I ran is %s of %d. I should read its output, note anything the later steps "+
		"depend on, and then run the next step exactly as the task describes it, one tool call only; "+
		"after step %d I report the final check value from its output, in the exact format the user asked for, "+
		"without running anything else.", Marker(last), steps, steps)
}

func (m *LongTask) answer(c *Call) Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Requests++
	last := lastStep(c.Raw)
	if c.Header.Get(m.opts.SummaryHeader) != "" {
		m.stats.ProxySummaries++
		return Reply{Text: m.summary(last)}
	}
	if isClientSummary(c) {
		m.stats.ClientSummaries++
		return Reply{Text: m.summary(last)}
	}
	tools := toolSet(c)
	if !tools.shell() {
		m.stats.Other++
		return Reply{Text: "ok"}
	}
	if last >= m.opts.Steps {
		check := "missing"
		if g := finalCheck.FindAllStringSubmatch(c.AllText, -1); g != nil {
			check = g[len(g)-1][1]
		}
		m.stats.Answer = fmt.Sprintf("LONGTASK COMPLETE steps=%d check=%s", last, check)
		return Reply{Text: m.stats.Answer}
	}
	i := last + 1
	st := LongTaskStep(i, m.opts.Steps)
	m.stats.Steps++
	m.stats.LastStep = max(m.stats.LastStep, i)
	return Reply{Text: prose(i, st), ToolCalls: []ToolCall{m.toolCall(tools, i, st)}}
}

// summary is the model's summary of a history whose last step is last.
func (m *LongTask) summary(last int) string {
	var b strings.Builder
	if m.opts.SummaryTitle != "" {
		b.WriteString(m.opts.SummaryTitle + "\n\n")
	}
	fmt.Fprintf(&b, "## Goals\n- run the %d steps of the maintenance task, one tool call each, then report the final check\n", m.opts.Steps)
	if last > 0 {
		fmt.Fprintf(&b, "## Current state\n- the last step completed is %s (of %d); its output was read\n", Marker(last), m.opts.Steps)
	} else {
		b.WriteString("## Current state\n- no step has run yet\n")
	}
	b.WriteString("## Next steps\n- continue with the next step; after the last one, report LONGTASK COMPLETE with the FINAL_CHECK value of its output\n")
	return b.String()
}

// isClientSummary reports a client's compaction request: its last user
// message holds one of the clients' compaction prompts.
func isClientSummary(c *Call) bool {
	items := asSlice(c.Body["messages"])
	if c.API == APIResponses {
		items = asSlice(c.Body["input"])
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := asMap(items[i])
		if it["role"] != "user" {
			continue
		}
		t := textOf(it["content"])
		for _, p := range clientSummaryPrompts {
			if strings.Contains(t, p) {
				return true
			}
		}
		return false
	}
	return false
}

// tools are the step tools a request offers.
type tools struct {
	bash, read bool   // Claude Code's
	codex      string // exec_command, shell_command or shell
}

func (t tools) shell() bool { return t.bash || t.codex != "" }

func toolSet(c *Call) tools {
	var t tools
	for _, n := range c.ToolNames {
		switch n {
		case "Bash":
			t.bash = true
		case "Read":
			t.read = true
		case "exec_command", "shell_command", "shell":
			if t.codex == "" || n == "exec_command" {
				t.codex = n
			}
		}
	}
	return t
}

func (m *LongTask) toolCall(t tools, i int, st Step) ToolCall {
	cmd := st.Command
	if d := st.Duration.Seconds(); d > 0 && m.opts.ClockSpeed > 0 {
		cmd = fmt.Sprintf("sleep %s; %s", strconv.FormatFloat(d/m.opts.ClockSpeed, 'f', 3, 64), cmd)
	}
	switch {
	case t.bash && st.Kind == KindRead && t.read:
		return ToolCall{Name: "Read", Input: map[string]any{"file_path": filepath.Join(m.opts.Dir, st.Path)}}
	case t.bash:
		return ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": Marker(i) + ": " + st.Kind.String(), "timeout": 600000}}
	}
	switch t.codex {
	case "exec_command":
		return ToolCall{Name: t.codex, Input: map[string]any{"cmd": cmd, "max_output_tokens": 200_000, "yield_time_ms": 60_000}}
	case "shell_command":
		return ToolCall{Name: t.codex, Input: map[string]any{"command": cmd}}
	}
	return ToolCall{Name: t.codex, Input: map[string]any{"command": []string{"bash", "-lc", cmd}}}
}

// StepKind is what a step's tool call does.
type StepKind int

// Step kinds.
const (
	KindTest  StepKind = iota // cat a test log
	KindBuild                 // cat a build log (some steps slow)
	KindGrep                  // grep -n over a source file
	KindHead                  // head of a source file
	KindRead                  // read a whole source file (Claude Code's Read)
	KindFinal                 // the last step: a test log with the FINAL_CHECK
)

func (k StepKind) String() string {
	return [...]string{"test log", "build log", "grep", "head", "file read", "final test run"}[k]
}

// Step is one step of the task.
type Step struct {
	Kind StepKind
	// Path is the file the step reads, relative to the working directory.
	Path string
	// Command is the shell command that prints the step's output.
	Command string
	// Size is the characters of the output (of the file, for KindRead),
	// within a few percent.
	Size int
	// Duration is the session time the tool takes (a test run, a build):
	// with LongTaskOptions.ClockSpeed, the command sleeps that first.
	Duration time.Duration
}

// Tool times of the steps: a test run, and a slow build (past
// Anthropic's 5-minute cache lifetime, within OpenAI's 10 minutes).
const (
	TestTime      = 40 * time.Second
	SlowBuildTime = 6 * time.Minute
)

// stepMix is the fixed mix of 12 steps, repeated: most outputs a few
// thousand characters, three of 20,000 to 60,000 (one of them Bash, under
// Claude Code's 30,000-character cut of Bash output); three test runs and
// one slow build take time.
var stepMix = [12]struct {
	kind StepKind
	size int
	time time.Duration
}{
	{KindTest, 3000, TestTime},
	{KindGrep, 2500, 0},
	{KindRead, 30000, 0},
	{KindHead, 3000, 0},
	{KindBuild, 5000, SlowBuildTime},
	{KindGrep, 6000, 0},
	{KindTest, 8000, TestTime},
	{KindRead, 14000, 0},
	{KindHead, 4000, 0},
	{KindTest, 22000, TestTime},
	{KindRead, 55000, 0},
	{KindGrep, 4000, 0},
}

// headLines is the lines a KindHead step prints.
const headLines = 80

// LongTaskStep returns step i (from 1) of a task of steps steps.
func LongTaskStep(i, steps int) Step {
	if i == steps {
		p := "logs/final-test.log"
		return Step{Kind: KindFinal, Path: p, Command: "cat " + p, Size: 2500, Duration: TestTime}
	}
	mx := stepMix[(i-1)%len(stepMix)]
	st := Step{Kind: mx.kind, Size: mx.size, Duration: mx.time}
	switch mx.kind {
	case KindTest:
		st.Path = fmt.Sprintf("logs/test-%03d.log", i)
		st.Command = "cat " + st.Path
	case KindBuild:
		st.Path = fmt.Sprintf("logs/build-%03d.log", i)
		st.Command = "cat " + st.Path
	case KindGrep:
		st.Path = fmt.Sprintf("src/pkg%03d/handlers.go", i)
		st.Command = "grep -n Handle " + st.Path
	case KindHead:
		st.Path = fmt.Sprintf("src/pkg%03d/service.go", i)
		st.Command = fmt.Sprintf("head -n %d %s", headLines, st.Path)
	case KindRead:
		st.Path = fmt.Sprintf("src/pkg%03d/store.go", i)
		st.Command = "cat " + st.Path
	}
	return st
}

// WriteLongTaskFiles writes into dir the files the steps of a task of
// steps steps read.
func WriteLongTaskFiles(dir string, steps int) error {
	for i := 1; i <= steps; i++ {
		st := LongTaskStep(i, steps)
		p := filepath.Join(dir, st.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(stepFile(i, st, steps)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// stepFile returns the content of step i's file: its output is about
// st.Size characters.
func stepFile(i int, st Step, steps int) string {
	r := rand.New(rand.NewPCG(uint64(i), 22))
	var b strings.Builder
	switch st.Kind {
	case KindTest, KindFinal:
		testLog(&b, r, i, st.Size)
		if st.Kind == KindFinal {
			fmt.Fprintf(&b, "FINAL_CHECK=%s\n", longTaskCheck(steps))
		}
	case KindBuild:
		buildLog(&b, r, i, st.Size)
	case KindGrep:
		// Every other line matches: grep -n prints about half the file,
		// plus line numbers.
		n := 0
		for line := 1; n < st.Size; line++ {
			l := goLine(r, i, line)
			if line%2 == 1 {
				l = fmt.Sprintf("func (s *Service%03d) Handle%s%d(ctx context.Context, req *%sRequest) (*%sResponse, error) {", i, word(r), line, word(r), word(r))
				n += len(l) + len(strconv.Itoa(line)) + 2
			}
			b.WriteString(l + "\n")
		}
	case KindHead:
		// headLines lines of about the right length, then more file.
		per := st.Size / headLines
		for line := 1; line <= headLines*3; line++ {
			l := goLine(r, i, line)
			for len(l) < per-1 {
				l += " // " + word(r)
			}
			b.WriteString(l[:min(len(l), max(per-1, 20))] + "\n")
		}
	case KindRead:
		for line := 1; b.Len() < st.Size; line++ {
			b.WriteString(goLine(r, i, line) + "\n")
		}
	}
	return b.String()
}

var words = strings.Fields(`account order item cache index batch queue token session buffer report
	invoice ledger payment cursor shard replica lease window budget policy tenant quota metric span`)

func word(r *rand.Rand) string {
	w := words[r.IntN(len(words))]
	return strings.ToUpper(w[:1]) + w[1:]
}

func goLine(r *rand.Rand, pkg, line int) string {
	switch r.IntN(8) {
	case 0:
		return fmt.Sprintf("\tif err := s.%s.Load(ctx, id); err != nil {", strings.ToLower(word(r)))
	case 1:
		return fmt.Sprintf("\t\treturn nil, fmt.Errorf(\"pkg%03d: load %s %%d: %%w\", id, err)", pkg, strings.ToLower(word(r)))
	case 2:
		return "\t}"
	case 3:
		return fmt.Sprintf("\t%s := make(map[string]*%s, %d)", strings.ToLower(word(r)), word(r), r.IntN(64))
	case 4:
		return fmt.Sprintf("// %s%d returns the %s of the %s, or ErrNotFound.", word(r), line, strings.ToLower(word(r)), strings.ToLower(word(r)))
	case 5:
		return fmt.Sprintf("func (s *Service%03d) %s%d(ctx context.Context, id int64) (*%s, error) {", pkg, word(r), line, word(r))
	case 6:
		return fmt.Sprintf("\tfor i, v := range s.%ss {", strings.ToLower(word(r)))
	}
	return fmt.Sprintf("\ts.metrics.Observe(%q, time.Since(start).Seconds())", strings.ToLower(word(r))+"_latency")
}

func testLog(b *strings.Builder, r *rand.Rand, pkg, size int) {
	for n := 1; b.Len() < size-200; n++ {
		name := fmt.Sprintf("Test%s%s_%d", word(r), word(r), n)
		fmt.Fprintf(b, "=== RUN   %s\n", name)
		if r.IntN(3) == 0 {
			fmt.Fprintf(b, "    %s_test.go:%d: %s %s: got %d items, want %d\n", strings.ToLower(word(r)), 20+r.IntN(400), strings.ToLower(word(r)), strings.ToLower(word(r)), r.IntN(50), r.IntN(50))
		}
		fmt.Fprintf(b, "--- PASS: %s (%d.%02ds)\n", name, r.IntN(3), r.IntN(100))
	}
	fmt.Fprintf(b, "PASS\nok  \tgithub.com/acme/svc/pkg%03d\t%d.%03ds\n", pkg, 1+r.IntN(9), r.IntN(1000))
}

func buildLog(b *strings.Builder, r *rand.Rand, pkg, size int) {
	for n := 1; b.Len() < size-100; n++ {
		pct := min(100, n*100/(size/90))
		fmt.Fprintf(b, "[%3d%%] Building Go object pkg%03d/%s_%s.o (%d ms)\n", pct, pkg, strings.ToLower(word(r)), strings.ToLower(word(r)), 10+r.IntN(900))
		if r.IntN(7) == 0 {
			fmt.Fprintf(b, "warning: pkg%03d/%s.go:%d: %s shadows a declaration\n", pkg, strings.ToLower(word(r)), r.IntN(900), strings.ToLower(word(r)))
		}
	}
	fmt.Fprintf(b, "[100%%] Built target svc (pkg%03d), 0 errors\n", pkg)
}

// prose is the assistant text of step i: the step's marker and about 200
// to 800 tokens of the model's reasoning.
func prose(i int, st Step) string {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	target := 200 + (i*137)%601 // tokens
	var b strings.Builder
	fmt.Fprintf(&b, "%s: next, the %s (%s).", Marker(i), st.Kind, st.Path)
	for n := 0; n < target; n += 12 {
		fmt.Fprintf(&b, " The %s of the %s looks consistent with the %s path.", strings.ToLower(word(r)), strings.ToLower(word(r)), strings.ToLower(word(r)))
	}
	return b.String()
}
