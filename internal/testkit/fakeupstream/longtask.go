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
// SummaryHeader, and the clients' own: Claude Code's, Codex's and Gemini
// CLI's compaction prompts in the request's last user message) with a
// summary that states the last step reached. It drives Claude Code (Bash,
// Read), Codex (its shell tools), Gemini CLI (run_shell_command,
// read_file) and opencode (bash, read), whichever tools the request
// offers.
//
// The final answer is "LONGTASK COMPLETE steps=N check=VALUE", where VALUE
// is the FINAL_CHECK the last step's output carries (LongTaskAnswer); a
// request without that output gets "check=missing".
//
// With LongTaskOptions.Chained the task needs what its outputs say, as a
// real one does: each step's output prints, in its middle (far from the
// head and tail a reference previews), the line "chain step NNN
// NEXT=<hex>", and the next step's file is named with that value, so its
// command cannot be written without it; three early steps (KeepSteps)
// print "KEEP<k>=<hex>", and the final answer quotes the three (Answer).
// The model looks for each value it needs in the request it receives (a
// summary that kept it counts); when the value is not there, it reads
// back what the request points at (an offloaded result's <file>PATH</file>
// or an absolute path under LongTaskOptions.PathRoots, with the client's
// file tool or cat; an artifact id with get_knowledge_by_id when the
// request offers it), newest pointer first, up to 3 reads per value, and
// goes on without the value when nothing is left to read (the step's
// command then fails and the chain is broken: LongTaskStats.ChainMisses).
type LongTask struct {
	opts LongTaskOptions

	mu    sync.Mutex
	stats LongTaskStats
	// tried holds the pointers read back, per value sought ("want" NUL
	// pointer key); reads counts the reads per value.
	tried map[string]bool
	reads map[string]int
}

// LongTaskOptions configure a LongTask. The zero value runs 120 steps.
type LongTaskOptions struct {
	// Steps is the number of tool steps; 0 means 120.
	Steps int
	// Dir is the client's working directory, where WriteLongTaskFiles
	// wrote the files: a file tool (Claude Code's Read, Gemini CLI's
	// read_file) gets absolute paths under it. Shell commands use
	// relative paths.
	Dir string
	// ClockSpeed, when more than 0, makes the task take time as a real
	// session does, on a clock that runs ClockSpeed times faster than the
	// wall clock: the model answers after its latency (ModelLatency of
	// its output, divided by ClockSpeed), and a step's command sleeps its
	// tool's time (Step.Duration, divided by ClockSpeed) before printing.
	// 0 means no delays.
	ClockSpeed float64
	// NoLatency makes the model answer at once whatever ClockSpeed: a
	// replay on a recorded session's clock, whose commands must be the
	// recorded ones (their sleeps, of ClockSpeed, are in the output
	// billed), while the clock moves by the recorded times.
	NoLatency bool
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
	// SummaryTokens is the size of every summary the model writes, in
	// output tokens, as a real model's summary of a long session is: the
	// state, the values to remember, then an account of the steps run,
	// padded with deterministic text to the size. 0 means
	// DefaultSummaryTokens; less than 0 means the short summary (about
	// 100 tokens) of the state alone.
	SummaryTokens int
	// SlowBuild is the session time of the slow build, one step in 12;
	// 0 means SlowBuildTime (past Anthropic's 5-minute cache lifetime).
	SlowBuild time.Duration
	// SmallOutputs makes the outputs 500 to 5,000 characters (the same
	// mix of 12, scaled down) instead of 2,500 to 55,000.
	SmallOutputs bool
	// Chained makes the task need what its outputs print (see LongTask):
	// each step's command uses the value the previous output printed, and
	// the final answer quotes three values printed early.
	Chained bool
	// PathRoots are directories: an absolute path under one of them in a
	// request is a pointer the model may read back (besides
	// <file>PATH</file>), with Chained.
	PathRoots []string
}

// DefaultSummaryTokens is the size of the model's summaries by default.
const DefaultSummaryTokens = 2500

// LongTaskStats count what the model answered.
type LongTaskStats struct {
	// Requests counts the requests the model answered; Steps the tool
	// steps it asked for (a step asked twice counts twice).
	Requests int `json:"requests"`
	Steps    int `json:"steps"`
	// LastStep is the highest step asked for.
	LastStep int `json:"last_step"`
	// ProxySummaries and ClientSummaries count the summary requests of
	// the proxy and of the client.
	ProxySummaries  int `json:"proxy_summaries"`
	ClientSummaries int `json:"client_summaries"`
	// Other counts the requests that were neither a step nor a summary
	// (titles, checks without the tools): answered "ok".
	Other int `json:"other"`
	// ReadBacks counts the read-back turns (Chained): tool calls that read
	// a pointer back because a value the task needs was not in the
	// request.
	ReadBacks int `json:"read_backs"`
	// ChainMisses counts the steps run without the value the previous
	// step printed (Chained), for want of it and of anything to read.
	ChainMisses int `json:"chain_misses"`
	// Answer is the final answer ("" before it).
	Answer string `json:"answer"`
}

// The texts that start a client's own compaction request: Claude Code's
// and Codex's; Gemini CLI's two (the summary, then its verification).
var clientSummaryPrompts = []string{
	"Your task is to create a detailed summary of the conversation so far",
	"CONTEXT CHECKPOINT COMPACTION",
	"First, reason in your scratchpad. Then, generate the updated <state_snapshot>.",
	"Critically evaluate the <state_snapshot> you just generated.",
}

// NewLongTask returns a LongTask model.
func NewLongTask(opts LongTaskOptions) *LongTask {
	if opts.Steps <= 0 {
		opts.Steps = 120
	}
	if opts.SummaryHeader == "" {
		opts.SummaryHeader = DefaultSummaryHeader
	}
	if opts.SummaryTokens == 0 {
		opts.SummaryTokens = DefaultSummaryTokens
	}
	if opts.SlowBuild <= 0 {
		opts.SlowBuild = SlowBuildTime
	}
	return &LongTask{opts: opts, tried: map[string]bool{}, reads: map[string]int{}}
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
	anyNext    = regexp.MustCompile(`chain step ([0-9]{3,}) NEXT=([0-9a-f]{16})`)
)

// nextPattern matches the NEXT value step i printed; keepPattern the
// value KEEP<k>.
func nextPattern(i int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`chain step %03d NEXT=([0-9a-f]{16})`, i))
}

func keepPattern(k int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`KEEP%d=([0-9a-f]{16})`, k))
}

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

// CorrectAnswer returns the task's correct final answer: LongTaskAnswer,
// and with Chained the three KEEP values after it, as "... keep=K1,K2,K3".
func (m *LongTask) CorrectAnswer() string {
	if !m.opts.Chained {
		return LongTaskAnswer(m.opts.Steps)
	}
	return fmt.Sprintf("%s keep=%s,%s,%s", LongTaskAnswer(m.opts.Steps),
		chainValue("keep", m.opts.Steps, 1), chainValue("keep", m.opts.Steps, 2), chainValue("keep", m.opts.Steps, 3))
}

// chainValue is a value of the chained task of steps steps: kind "next"
// the NEXT value step i prints, "keep" the value KEEP<i>.
func chainValue(kind string, steps, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("longtask-%s-%d-%d", kind, steps, i)))
	return hex.EncodeToString(h[:8])
}

// KeepSteps returns the steps that print KEEP1, KEEP2 and KEEP3 in a
// chained task of steps steps: 2, 5 and 9, or in a task of fewer than
// 10 steps the first, the middle and the last.
func KeepSteps(steps int) [3]int {
	if steps >= 10 {
		return [3]int{2, 5, 9}
	}
	return [3]int{1, (steps + 1) / 2, steps}
}

// Script answers the requests; use it as Options.Script.
func (m *LongTask) Script(c *Call) Reply {
	r := m.reply(c)
	if m.opts.ClockSpeed > 0 && !m.opts.NoLatency {
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
	if m.opts.Thinking && (len(r.ToolCalls) > 0 || strings.HasPrefix(r.Text, "LONGTASK COMPLETE")) {
		switch {
		case c.API == APIAnthropic:
			switch asMap(c.Body["thinking"])["type"] {
			case "enabled", "adaptive":
				r.Thinking = thinkingText(m.Stats().LastStep, m.opts.Steps)
			}
		case c.API == APIGemini && geminiThinks(c):
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
		return Reply{Text: m.summary(c, last)}
	}
	if isClientSummary(c) {
		m.stats.ClientSummaries++
		return Reply{Text: m.summary(c, last)}
	}
	tools := toolSet(c)
	if !tools.shell() {
		m.stats.Other++
		return Reply{Text: "ok"}
	}
	if last >= m.opts.Steps {
		return m.final(c, tools, last)
	}
	i := last + 1
	next := ""
	if m.opts.Chained && last > 0 {
		ts := requestTexts(c)
		v, ok := findValue(ts, nextPattern(last))
		if !ok {
			if r, ok := m.readBack(c, tools, ts, fmt.Sprintf("NEXT of step %d", last), last); ok {
				return r
			}
			m.stats.ChainMisses++
			v = "missing"
		}
		next = v
	}
	st := m.stepWith(i, next)
	m.stats.Steps++
	m.stats.LastStep = max(m.stats.LastStep, i)
	return Reply{Text: prose(i, st), ToolCalls: []ToolCall{m.toolCall(tools, i, st)}}
}

// final is the final answer after step last: the FINAL_CHECK of the last
// step's output and, Chained, the three KEEP values, each found in the
// request or read back first. m.mu is held.
func (m *LongTask) final(c *Call, t tools, last int) Reply {
	ts := requestTexts(c)
	check, ok := findValue(ts, finalCheck)
	if !m.opts.Chained {
		if !ok {
			check = "missing"
		}
		m.stats.Answer = fmt.Sprintf("LONGTASK COMPLETE steps=%d check=%s", last, check)
		return Reply{Text: m.stats.Answer}
	}
	if !ok {
		if r, ok := m.readBack(c, t, ts, "FINAL_CHECK", m.opts.Steps); ok {
			return r
		}
		check = "missing"
	}
	var keep [3]string
	steps := KeepSteps(m.opts.Steps)
	for k := range keep {
		v, ok := findValue(ts, keepPattern(k+1))
		if !ok {
			if r, ok := m.readBack(c, t, ts, fmt.Sprintf("KEEP%d", k+1), steps[k]); ok {
				return r
			}
			v = "missing"
		}
		keep[k] = v
	}
	m.stats.Answer = fmt.Sprintf("LONGTASK COMPLETE steps=%d check=%s keep=%s,%s,%s", last, check, keep[0], keep[1], keep[2])
	return Reply{Text: m.stats.Answer}
}

// maxReadBacks bounds the read-back calls for one value.
const maxReadBacks = 3

// readBack returns a call that reads back a pointer of the request, for
// the value want that step printed: first the pointers in that step's
// results, then the others, newest first; none that was tried for want
// already, at most maxReadBacks for want. It reports false when there is
// nothing (more) to read. m.mu is held.
func (m *LongTask) readBack(c *Call, t tools, ts []requestText, want string, step int) (Reply, bool) {
	if m.reads[want] >= maxReadBacks {
		return Reply{}, false
	}
	idTool := ""
	for _, n := range c.ToolNames {
		if n == "get_knowledge_by_id" || strings.HasSuffix(n, "__get_knowledge_by_id") ||
			strings.HasPrefix(n, "mcp_") && strings.HasSuffix(n, "_get_knowledge_by_id") { // Gemini CLI's mcp_<server>_<tool>
			idTool = n
		}
	}
	pointersOf := func(text string) []pointer {
		ps := pathPointers(text, m.opts.PathRoots)
		if idTool != "" {
			ps = append(ps, idPointers(text)...)
		}
		return ps
	}
	var ps []pointer
	for _, tx := range ts {
		if tx.result && tx.step == step {
			ps = append(ps, pointersOf(tx.text)...)
		}
	}
	for i := len(ts) - 1; i >= 0; i-- {
		if !(ts[i].result && ts[i].step == step) {
			ps = append(ps, pointersOf(ts[i].text)...)
		}
	}
	for _, p := range ps {
		key := want + "\x00" + p.key()
		if m.tried[key] {
			continue
		}
		tc, ok := m.readCall(t, p, idTool)
		if !ok {
			continue
		}
		m.tried[key] = true
		m.reads[want]++
		m.stats.ReadBacks++
		return Reply{Text: fmt.Sprintf("The %s is not in the context any more: reading back what it points at.", want),
			ToolCalls: []ToolCall{tc}}, true
	}
	return Reply{}, false
}

// readCall returns the call that reads p back: a path with Claude Code's
// Read (or cat through the shell tool), an id with idTool.
func (m *LongTask) readCall(t tools, p pointer, idTool string) (ToolCall, bool) {
	if p.path == "" {
		if idTool == "" {
			return ToolCall{}, false
		}
		in := map[string]any{"artifact_id": p.id}
		if p.offset > 0 {
			in["offset"] = p.offset
		}
		return ToolCall{Name: idTool, Input: in}, true
	}
	if t.bash && t.read {
		return ToolCall{Name: "Read", Input: map[string]any{"file_path": p.path}}, true
	}
	if t.gemini && t.geminiRead {
		return ToolCall{Name: "read_file", Input: map[string]any{"file_path": p.path}}, true
	}
	if t.opencode && t.opencodeRead {
		return ToolCall{Name: "read", Input: map[string]any{"filePath": p.path}}, true
	}
	return m.shellCall(t, "cat "+p.path, "read back"), true
}

// requestText is the text of one message (or input item) of a request.
type requestText struct {
	text string
	// result reports a tool result; step is the step whose call it
	// answers (the marker of the assistant turn before it), or 0.
	result bool
	step   int
}

// requestTexts returns the texts of the request's messages (Responses:
// input items) as the model reads them (after server-side edits), in
// order, each tool result attributed to the step whose assistant turn
// called it.
func requestTexts(c *Call) []requestText {
	body := c.Body
	if c.Edited != nil {
		body = c.Edited
	}
	var out []requestText
	step := 0
	marker := func(text string) int {
		if g := stepMarker.FindStringSubmatch(text); g != nil {
			n, _ := strconv.Atoi(g[1])
			return n
		}
		return 0
	}
	if c.API == APIGemini {
		return geminiTexts(body, marker)
	}
	if c.API == APIResponses {
		for _, iv := range asSlice(body["input"]) {
			it := asMap(iv)
			typ, _ := it["type"].(string)
			switch {
			case strings.HasSuffix(typ, "_output"):
				out = append(out, requestText{text: textOf(it["output"]), result: true, step: step})
			case it["role"] == "assistant":
				t := textOf(it["content"])
				step = marker(t)
				out = append(out, requestText{text: t})
			default:
				out = append(out, requestText{text: textOf(it["content"])})
			}
		}
		return out
	}
	for _, mv := range asSlice(body["messages"]) {
		msg := asMap(mv)
		if msg["role"] == "assistant" {
			t := textOf(msg["content"])
			step = marker(t)
			out = append(out, requestText{text: t})
			continue
		}
		for _, b := range blocksOf(msg) {
			if b["type"] == "tool_result" {
				out = append(out, requestText{text: textOf(b["content"]), result: true, step: step})
			} else {
				out = append(out, requestText{text: textOf(b)})
			}
		}
	}
	if s, ok := body["system"].(string); ok {
		out = append([]requestText{{text: s}}, out...)
	}
	return out
}

// findValue returns the first group of re's last match in the texts.
func findValue(ts []requestText, re *regexp.Regexp) (string, bool) {
	for i := len(ts) - 1; i >= 0; i-- {
		if g := re.FindAllStringSubmatch(ts[i].text, -1); g != nil {
			return g[len(g)-1][1], true
		}
	}
	return "", false
}

// summary is the model's summary of the conversation of c, whose last
// step is last: the state, with Chained the values to remember it finds
// (the KEEP values, the NEXT value of the latest step), then, to
// SummaryTokens, an account of the steps.
func (m *LongTask) summary(c *Call, last int) string {
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
	if m.opts.Chained {
		ts := requestTexts(c)
		b.WriteString("## Values to remember\n")
		for k := 1; k <= 3; k++ {
			if v, ok := findValue(ts, keepPattern(k)); ok {
				fmt.Fprintf(&b, "- KEEP%d=%s (the final report quotes it)\n", k, v)
			}
		}
		n, v := 0, ""
		for _, tx := range ts {
			for _, g := range anyNext.FindAllStringSubmatch(tx.text, -1) {
				if s, _ := strconv.Atoi(g[1]); s >= n {
					n, v = s, g[2]
				}
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, "- chain step %03d NEXT=%s (the next step's command needs it)\n", n, v)
		}
	}
	b.WriteString("## Next steps\n- continue with the next step; after the last one, report LONGTASK COMPLETE with the FINAL_CHECK value of its output\n")
	if m.opts.SummaryTokens > 0 {
		m.pad(&b, last)
	}
	return b.String()
}

// pad adds to a summary an account of the steps up to last, until the
// summary is about SummaryTokens tokens.
func (m *LongTask) pad(b *strings.Builder, last int) {
	b.WriteString("## Work so far\n")
	n := count(b.String())
	r := rand.New(rand.NewPCG(uint64(last), 25))
	for j := 0; n < m.opts.SummaryTokens; j++ {
		var line string
		if last > 0 {
			i := j%last + 1
			st := LongTaskStep(i, m.opts.Steps)
			line = fmt.Sprintf("- step %d, the %s of %s: the %s of the %s looks consistent with the %s path; nothing to change there.\n",
				i, st.Kind, filepath.Dir(st.Path), strings.ToLower(word(r)), strings.ToLower(word(r)), strings.ToLower(word(r)))
		} else {
			line = fmt.Sprintf("- the %s of the %s is still to be checked.\n", strings.ToLower(word(r)), strings.ToLower(word(r)))
		}
		b.WriteString(line)
		n += count(line)
	}
}

// isClientSummary reports a client's compaction request: its last user
// message holds one of the clients' compaction prompts.
func isClientSummary(c *Call) bool {
	items := asSlice(c.Body["messages"])
	switch c.API {
	case APIResponses:
		items = asSlice(c.Body["input"])
	case APIGemini:
		items = asSlice(c.Body["contents"])
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := asMap(items[i])
		if it["role"] != "user" {
			continue
		}
		t := textOf(it["content"])
		if c.API == APIGemini {
			t = geminiPartsText(it)
		}
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
	bash, read             bool   // Claude Code's
	codex                  string // exec_command, shell_command or shell
	gemini, geminiRead     bool   // Gemini CLI's run_shell_command and read_file
	opencode, opencodeRead bool   // opencode's bash and read
}

func (t tools) shell() bool { return t.bash || t.codex != "" || t.gemini || t.opencode }

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
		case "run_shell_command":
			t.gemini = true
		case "read_file":
			t.geminiRead = true
		case "bash":
			t.opencode = true
		case "read":
			t.opencodeRead = true
		}
	}
	return t
}

func (m *LongTask) toolCall(t tools, i int, st Step) ToolCall {
	cmd := st.Command
	if d := st.Duration.Seconds(); d > 0 && m.opts.ClockSpeed > 0 {
		cmd = fmt.Sprintf("sleep %s; %s", strconv.FormatFloat(d/m.opts.ClockSpeed, 'f', 3, 64), cmd)
	}
	if t.bash && st.Kind == KindRead && t.read {
		return ToolCall{Name: "Read", Input: map[string]any{"file_path": filepath.Join(m.opts.Dir, st.Path)}}
	}
	if t.gemini && st.Kind == KindRead && t.geminiRead {
		return ToolCall{Name: "read_file", Input: map[string]any{"file_path": filepath.Join(m.opts.Dir, st.Path)}}
	}
	if t.opencode && st.Kind == KindRead && t.opencodeRead {
		return ToolCall{Name: "read", Input: map[string]any{"filePath": filepath.Join(m.opts.Dir, st.Path)}}
	}
	return m.shellCall(t, cmd, Marker(i)+": "+st.Kind.String())
}

// shellCall returns the call of the request's shell tool that runs cmd;
// description is Claude Code's Bash and Gemini CLI's run_shell_command
// description (opencode's bash has none).
func (m *LongTask) shellCall(t tools, cmd, description string) ToolCall {
	if t.bash {
		return ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": description, "timeout": 600000}}
	}
	if t.gemini {
		return ToolCall{Name: "run_shell_command", Input: map[string]any{"command": cmd, "description": description}}
	}
	if t.opencode {
		return ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "timeout": 600000}}
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
	KindRead                  // read a whole source file (Claude Code's Read, Gemini CLI's read_file, opencode's read)
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
// Anthropic's 5-minute cache lifetime, within OpenAI's 10).
const (
	TestTime      = 40 * time.Second
	SlowBuildTime = 6 * time.Minute
)

// slowBuild stands in stepMix for the slow build's time, which
// LongTaskOptions.SlowBuild sets.
const slowBuild = -1

// stepMix is the fixed mix of 12 steps, repeated: most outputs a few
// thousand characters, three of 20,000 to 60,000 (one of them Bash, under
// Claude Code's 30,000-character cut of Bash output); three test runs and
// one slow build take time. small is the size with
// LongTaskOptions.SmallOutputs: 500 to 5,000 characters.
var stepMix = [12]struct {
	kind        StepKind
	size, small int
	time        time.Duration
}{
	{KindTest, 3000, 800, TestTime},
	{KindGrep, 2500, 600, 0},
	{KindRead, 30000, 3000, 0},
	{KindHead, 3000, 1800, 0},
	{KindBuild, 5000, 1000, slowBuild},
	{KindGrep, 6000, 1200, 0},
	{KindTest, 8000, 1500, TestTime},
	{KindRead, 14000, 2500, 0},
	{KindHead, 4000, 2000, 0},
	{KindTest, 22000, 3500, TestTime},
	{KindRead, 55000, 5000, 0},
	{KindGrep, 4000, 900, 0},
}

// Sizes of the final step's output.
const (
	finalSize      = 2500
	finalSizeSmall = 800
)

// headLines is the lines a KindHead step prints.
const headLines = 80

// LongTaskStep returns step i (from 1) of a task of steps steps, with
// the default options (LongTask.Step gives the steps of other options).
func LongTaskStep(i, steps int) Step { return longTaskStep(i, steps, false, SlowBuildTime) }

func longTaskStep(i, steps int, small bool, slow time.Duration) Step {
	if i == steps {
		st := Step{Kind: KindFinal, Path: "logs/final-test.log", Size: finalSize, Duration: TestTime}
		if small {
			st.Size = finalSizeSmall
		}
		st.Command = command(st)
		return st
	}
	mx := stepMix[(i-1)%len(stepMix)]
	st := Step{Kind: mx.kind, Size: mx.size, Duration: mx.time}
	if small {
		st.Size = mx.small
	}
	if st.Duration == slowBuild {
		st.Duration = slow
	}
	switch mx.kind {
	case KindTest:
		st.Path = fmt.Sprintf("logs/test-%03d.log", i)
	case KindBuild:
		st.Path = fmt.Sprintf("logs/build-%03d.log", i)
	case KindGrep:
		st.Path = fmt.Sprintf("src/pkg%03d/handlers.go", i)
	case KindHead:
		st.Path = fmt.Sprintf("src/pkg%03d/service.go", i)
	case KindRead:
		st.Path = fmt.Sprintf("src/pkg%03d/store.go", i)
	}
	st.Command = command(st)
	return st
}

// command returns the shell command that prints st's output.
func command(st Step) string {
	switch st.Kind {
	case KindGrep:
		return "grep -n Handle " + st.Path
	case KindHead:
		return fmt.Sprintf("head -n %d %s", headLines, st.Path)
	}
	return "cat " + st.Path
}

// Step returns step i (from 1) of the task: with Chained, its file is
// named with the NEXT value of step i-1.
func (m *LongTask) Step(i int) Step {
	next := ""
	if i > 1 {
		next = chainValue("next", m.opts.Steps, i-1)
	}
	return m.stepWith(i, next)
}

// stepWith returns step i of the task, whose file is named with next
// when Chained (the value the model found for it).
func (m *LongTask) stepWith(i int, next string) Step {
	st := longTaskStep(i, m.opts.Steps, m.opts.SmallOutputs, m.opts.SlowBuild)
	if m.opts.Chained && i > 1 {
		ext := filepath.Ext(st.Path)
		st.Path = strings.TrimSuffix(st.Path, ext) + "-" + next + ext
		st.Command = command(st)
	}
	return st
}

// WriteLongTaskFiles writes into dir the files the steps of a task of
// steps steps read, with the default options (LongTask.WriteFiles writes
// those of other options).
func WriteLongTaskFiles(dir string, steps int) error {
	return NewLongTask(LongTaskOptions{Steps: steps, Dir: dir}).WriteFiles()
}

// WriteFiles writes into LongTaskOptions.Dir the files the task's steps
// read.
func (m *LongTask) WriteFiles() error {
	for i := 1; i <= m.opts.Steps; i++ {
		st := m.Step(i)
		p := filepath.Join(m.opts.Dir, st.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		content := stepFile(i, st, m.opts.Steps)
		if m.opts.Chained {
			content = insertMiddle(content, st.Kind, m.chainLines(i, st.Kind))
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// chainLines are the lines step i's output prints for a chained task:
// its NEXT value (but the last step's) and the KEEP values it holds. A
// grep step's lines match its pattern, so that it prints them.
func (m *LongTask) chainLines(i int, kind StepKind) []string {
	var lines []string
	if i < m.opts.Steps {
		lines = append(lines, fmt.Sprintf("chain step %03d NEXT=%s", i, chainValue("next", m.opts.Steps, i)))
	}
	for k, s := range KeepSteps(m.opts.Steps) {
		if s == i {
			lines = append(lines, fmt.Sprintf("KEEP%d=%s", k+1, chainValue("keep", m.opts.Steps, k+1)))
		}
	}
	if kind == KindGrep {
		for j, l := range lines {
			lines[j] = "// Handle " + l
		}
	}
	return lines
}

// insertMiddle returns content with lines inserted at a line boundary in
// the middle of what the step prints: the middle of the file, or of the
// lines a KindHead step prints.
func insertMiddle(content string, kind StepKind, lines []string) string {
	if len(lines) == 0 {
		return content
	}
	at := len(content) / 2
	if kind == KindHead {
		at = 0
		for n := 0; n < headLines/2; n++ {
			j := strings.IndexByte(content[at:], '\n')
			if j < 0 {
				break
			}
			at += j + 1
		}
	} else if j := strings.IndexByte(content[at:], '\n'); j >= 0 {
		at += j + 1
	} else {
		at = len(content)
	}
	return content[:at] + strings.Join(lines, "\n") + "\n" + content[at:]
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
