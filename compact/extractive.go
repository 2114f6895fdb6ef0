package compact

import (
	"context"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens"
)

// DefaultSummaryTokens bounds the summary Extractive writes, in tokens.
const DefaultSummaryTokens = 4_000

// shortBudget is the least budget of a short middle's summary, besides its
// requests.
const shortBudget = 600

// Extractive is the offline Summarizer, and Compact's default: it needs no
// model and writes the same summary, byte for byte, for the same messages.
// It writes what a model needs to continue the work, in these sections:
//
//   - User requests: every request of the user (see UserRequests),
//     verbatim, oldest first, newest last.
//   - Earlier summary: the lines of a summary another tool wrote (Claude
//     Code's "This session is being continued ..."), when the messages
//     hold one.
//   - Goals and key decisions: the assistant's statements of a decision or
//     a finding (because, instead, the problem is, ...).
//   - File operations: each file with what happened to it (created,
//     modified with the gist of the last edit, deleted, read), taken from
//     the inputs of successful tool calls and simple shell commands, then
//     the other paths the user and the assistant named, then (as room
//     allows) paths only tool output showed. Paths under one common
//     directory are written relative to it, which a first line declares.
//   - Key identifiers: the functions, types, modules, test names and issue
//     ids the work is about, ranked by how central they are (how often and
//     how recently the user and the assistant named them, in text and tool
//     inputs); names only tool output showed (in two results or more) fill
//     what room is left.
//   - Tool calls: a count per tool with its failures, then the other calls
//     than file operations (commands, searches), each once with how often
//     it ran, how many failed and its last key result line.
//   - Errors and fixes: each distinct error of a failed call (and errors
//     the harness reported in the user's name), and what followed: the
//     same call succeeding later, or a later run of the same command (go
//     test, npm run) succeeding after files changed, or the assistant's
//     next words.
//   - Current state: the current task (the todo list's item in progress,
//     else the latest request), the latest todo list (a todos input, as
//     Claude Code's TodoWrite, or a task_list, as OpenHands'
//     task_tracker), the plan (a checklist, or a numbered list the
//     assistant announced as a plan, in its latest text that has one), the
//     errors still open, the last assistant text and the next steps it
//     announced.
//
// Everything competes for a budget of MaxTokens tokens by importance: the
// requests, the todo list and the last assistant text first; then errors,
// changed files, next steps; then decisions, identifiers, read files,
// commands. Nothing is repeated, tool inputs are shown as readable calls
// (never as JSON), and results that prune or offload replaced (their
// placeholder, a <knowledge_list> entry, an offload reference) are never
// quoted. The summary holds nothing volatile: no timestamps, and the
// archive (Request.Archive) only when its name is stable (an artifact id
// named by its content, not a file path with a timestamp), so the same
// messages give the same bytes, which keeps prompt caches warm.
//
// A tool result is a failure when it has is_error or messageStatus "error",
// starts with "Error:", or reports a non-zero exit code ("Exit code 2",
// <returncode>1</returncode>, {"exitCode":1}).
//
// The summary ends with the pointer section of Request.Pointers (see
// PointersTitle): where each stored original and the archive can be read
// back. MaxTokens and MaxChars bound the summary before that section, which
// Options.MaxPointers bounds instead.
//
// A previous summary of this package in the messages (see IsSummary) is
// carried: its requests stay verbatim before the new ones, and its other
// lines go back into their sections, so repeated compactions keep the start
// of the story. Its pointer section is not read as part of the story: its
// pointers come back in Request.Pointers (Compact puts them there).
type Extractive struct {
	// MaxTokens bounds the summary, in tokens of Counter, without its
	// pointer section. Zero means DefaultSummaryTokens. A short middle
	// gets less: about half the size of the user's and the assistant's
	// words and tool inputs plus a fortieth of the tool output (at least
	// 600 tokens), plus its requests. The requests are kept whole while
	// they fit in 55% of it; beyond that the oldest long ones are
	// shortened, and then the oldest but the first are left out.
	MaxTokens int
	// MaxChars, when positive, also bounds the summary in characters,
	// without its pointer section.
	MaxChars int
	// Counter measures the summary. Nil means tokens.O200kBase().
	Counter tokens.Counter
}

// Summarize implements Summarizer. It fails only when ctx is done.
func (e Extractive) Summarize(ctx context.Context, req Request) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	budget := e.MaxTokens
	if budget <= 0 {
		budget = DefaultSummaryTokens
	}
	tc := e.Counter
	if tc == nil {
		tc = tokens.O200kBase()
	}
	// Counted here, not with agentctx.ToolUses, which copies each OpenAI
	// call's arguments to hand them out.
	calls, assistants := 0, 0
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role == agentctx.RoleAssistant {
			assistants++
		}
		calls += len(m.ToolCalls)
		for _, b := range m.Content.Blocks() {
			if b.Type == agentctx.BlockToolUse {
				calls++
			}
		}
	}
	x := newExtraction(calls, assistants)
	for i := range req.Messages {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		x.add(i, &req.Messages[i])
	}
	x.archive = req.Archive
	return WithPointers(x.render(tc, budget, e.MaxChars), req.Pointers), nil
}

// Section headings, in order. The first five are seed 002's.
const (
	titleGoals    = "Goals and key decisions"
	titleFiles    = "File operations"
	titleTools    = "Tool calls"
	titleState    = "Current state"
	titleErrors   = "Errors and fixes"
	titleRequests = "User requests"
	titleEarlier  = "Earlier summary"
	titleIdents   = "Key identifiers"
)

const (
	secRequests = iota
	secEarlier
	secGoals
	secFiles
	secIdents
	secTools
	secErrors
	secState
	numSections
)

var sectionTitles = [numSections]string{
	secRequests: titleRequests,
	secEarlier:  titleEarlier,
	secGoals:    titleGoals,
	secFiles:    titleFiles,
	secIdents:   titleIdents,
	secTools:    titleTools,
	secErrors:   titleErrors,
	secState:    titleState,
}

// required sections are written even when empty ("- none"): the seed's
// five.
func required(sec int) bool {
	switch sec {
	case secGoals, secFiles, secTools, secState, secErrors:
		return true
	}
	return false
}

func sectionIndex(title string) int {
	for i, t := range sectionTitles {
		if strings.EqualFold(title, t) {
			return i
		}
	}
	return -1
}

// call is one tool call and what came of it.
type call struct {
	msg       int
	name, id  string
	key       string     // the telling part of the input
	head      string     // the first words of a shell command
	in        *toolInput // kept for file operations and todo lists only
	parsed    bool
	answered  bool
	failed    bool
	hidden    bool   // the result was replaced by a stand-in
	result    string // key line of the result
	resultMsg int
	writes    []string // paths the call creates, modifies or deletes if it succeeds
	fileOp    bool     // the call reads or writes files
	todos     bool     // the call writes a todo list
}

// termStat is what the summary knows of one path or identifier.
type termStat struct {
	kind    int
	score   float64
	said    bool // named by the user or the assistant (text or tool input)
	lastMsg int
	first   int // order of first sight, for stable ties
}

type extraction struct {
	calls []*call
	byID  map[string]*call

	requests []string        // verbatim, oldest first (earlier summaries' first)
	texts    []assistantText // the assistant's texts, oldest first
	todos    []todo          // the last list a TodoWrite wrote, rendered once (renderTodos)
	prev     [numSections][]string
	earlier  []string // lines of a foreign summary
	prevMsgs int

	users, assistants int
	msgs              int

	terms     map[string]*termStat
	termOrder int

	fileList []*fileState
	archive  string   // Request.Archive
	size     int      // bytes of the user's and the assistant's text and tool inputs
	outSize  int      // bytes of tool output
	reported []string // errors the harness reported in the user's name
	leftOut  int      // requests left out for room

	scratch []byte // escaped input strings decoded one at a time (inputStrings)
	joined  []byte // a result's text blocks joined (scratchResultText)

	fixes     map[int]fixNote
	successes map[string][]int
}

// newExtraction returns an extraction with room for calls tool calls and
// the texts of as many assistant messages: a summary of 50,000 calls grew
// their list and map step by step (5.4 MB of garbage; issue 24, item 7),
// and one of 10 MB of OpenHands' turns its list of texts (1.4 MB).
func newExtraction(calls, assistants int) *extraction {
	return &extraction{calls: make([]*call, 0, calls), byID: make(map[string]*call, calls),
		texts: make([]assistantText, 0, assistants), terms: map[string]*termStat{}}
}

// assistantText is the text of an assistant message, trimmed, and the
// message's index.
type assistantText struct {
	msg  int
	text string
}

// textOf returns the assistant's text of message i, if it has one.
func (x *extraction) textOf(i int) (string, bool) {
	k, ok := slices.BinarySearchFunc(x.texts, i, func(t assistantText, i int) int { return t.msg - i })
	if !ok {
		return "", false
	}
	return x.texts[k].text, true
}

var systemReminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// Weights of a mention of a term, by where it is.
const (
	weightUser   = 3.0
	weightText   = 2.0
	weightInput  = 1.5
	weightCode   = 1.0
	weightResult = 0.25
)

func (x *extraction) add(i int, m *agentctx.Message) {
	x.msgs++
	if IsSummary(*m) {
		// Its pointers are not part of the story: they come back in
		// Request.Pointers.
		text := StripPointers(messageText(*m))
		x.addPrevious(text)
		x.scanText(i, text, weightUser)
		return
	}
	// The text of a user or assistant message, made once: it is a copy
	// when the message has several text blocks or carriage returns.
	var text string
	if m.Role == agentctx.RoleUser || m.Role == agentctx.RoleAssistant {
		text = strings.TrimSpace(userText(m))
	}
	if m.Role == agentctx.RoleUser && strings.HasPrefix(text, foreignSummaryPrefix) {
		x.addForeign(i, text)
	}
	switch m.Role {
	case agentctx.RoleTool:
		x.result(i, m.ToolCallID, m.Content, false, m.Status())
		return
	case agentctx.RoleAssistant:
		x.assistants++
	}
	if m.Role == agentctx.RoleUser && m.Status() == "error" && text != "" {
		x.reported = append(x.reported, text)
	}
	if r, ok := requestTextOf(m, text); ok {
		x.users++
		x.requests = append(x.requests, r)
		x.scanText(i, r, weightUser)
	}
	for _, b := range m.Content.Blocks() {
		switch b.Type {
		case agentctx.BlockToolUse:
			x.call(i, b.ID, b.Name, b.Input)
		case agentctx.BlockToolResult:
			x.result(i, b.ToolUseID, b.Content, b.IsError, m.Status())
		}
	}
	for _, tc := range m.ToolCalls {
		x.call(i, tc.ID, tc.Function.Name, unsafe.Slice(unsafe.StringData(tc.Function.Arguments), len(tc.Function.Arguments))) // read, never written
	}
	if m.Role == agentctx.RoleAssistant {
		if text != "" {
			x.texts = append(x.texts, assistantText{i, text})
			x.scanText(i, text, weightText)
		}
	}
}

// scanText scores the terms of text, once per message and weight, and
// counts its size.
func (x *extraction) scanText(i int, text string, weight float64) {
	if weight > weightResult {
		x.size += len(text)
	} else {
		x.outSize += len(text)
	}
	scanTerms(text, func(t string, kind int) {
		st := x.terms[t]
		if st == nil {
			x.termOrder++
			st = &termStat{kind: kind, first: x.termOrder, lastMsg: -1}
			x.terms[strings.Clone(t)] = st // text may be a tool input's bytes (inputStrings)
		}
		if weight > weightResult {
			st.said = true
		}
		// Count each term once per message.
		if st.lastMsg == i {
			return
		}
		st.score += weight
		st.lastMsg = i
	})
}

func (x *extraction) call(i int, id, name string, input []byte) {
	c := &call{msg: i, id: id, name: name, resultMsg: -1}
	in, parsed := borrowInput(input) // the extraction ends with the summary, which copies what it writes
	c.parsed = parsed
	c.key = inputKey(&in, parsed, input)
	if in.cmd != "" {
		c.head = commandHead(c.key)
	}
	if parsed {
		for _, op := range fileOps(name, &in, func(string) bool { return true }) {
			c.fileOp = true
			if op.kind != opRead && !slices.Contains(c.writes, op.path) {
				c.writes = append(c.writes, op.path)
			}
		}
		if len(in.Todos) > 0 {
			x.todos = in.Todos // rendered at the end: only the last one is summarized
			c.todos = true
		}
		if c.fileOp {
			kept := in
			c.in = &kept
		}
	}
	inputStrings(input, &x.scratch, func(s string) {
		w := weightInput
		if len(s) > 300 {
			w = weightCode // file content written or replaced: code, not a mention
		}
		x.scanText(i, s, w)
	})
	x.calls = append(x.calls, c)
	if _, dup := x.byID[id]; !dup && id != "" {
		x.byID[id] = c
	}
}

func (x *extraction) result(i int, id string, content agentctx.Content, isError bool, status string) {
	c := x.byID[id]
	if c == nil || c.answered {
		return
	}
	c.answered = true
	c.resultMsg = i
	text, scratch := scratchResultText(content, &x.joined)
	if isStandIn(text) {
		// Pruned or offloaded: what the tool said is not here. Only an
		// explicit error mark tells how it went.
		c.hidden = true
		c.failed = isError || status == "error"
		return
	}
	c.failed = textFailed(text, isError, status)
	c.result = keyLine(text, c.failed, 160)
	if scratch {
		c.result = strings.Clone(c.result) // the next result's text takes its bytes
	}
	if len(text) <= 64<<10 {
		x.scanText(i, text, weightResult)
	} else {
		x.outSize += len(text)
	}
}

// addPrevious files the items of an earlier summary of this package under
// their sections; its requests stay verbatim.
func (x *extraction) addPrevious(text string) {
	x.prevMsgs++
	sec := -1
	var cur []string
	prevBase := ""
	flush := func() {
		if sec >= 0 && len(cur) > 0 {
			item := strings.Join(cur, "\n")
			switch {
			case sec == secRequests:
				x.requests = append(x.requests, item)
			case sec == secFiles:
				// File lines go back to whole paths; the new summary
				// writes them relative to its own directory.
				if b, ok := strings.CutPrefix(item, basePrefix); ok {
					prevBase = b
					break
				}
				if strings.HasPrefix(item, "In tool output: ") {
					break
				}
				if p, rest, ok := strings.Cut(item, ": "); ok && prevBase != "" && !strings.HasPrefix(p, "/") && !strings.Contains(p, " ") {
					item = prevBase + p + ": " + rest
				}
				x.prev[sec] = append(x.prev[sec], item)
			default:
				x.prev[sec] = append(x.prev[sec], item)
			}
		}
		cur = nil
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.HasPrefix(line, "## ") {
			flush()
			sec = sectionIndex(strings.TrimSpace(line[3:]))
			continue
		}
		if sec < 0 {
			continue
		}
		if body, ok := itemStart(line); ok {
			flush()
			if body != "none" {
				cur = []string{body}
			}
			continue
		}
		if len(cur) > 0 && strings.HasPrefix(line, "   ") {
			cur = append(cur, strings.TrimPrefix(line, "   "))
		}
	}
	flush()
}

// itemStart reports whether line begins an item ("- x" or "12. x") and
// returns its text.
func itemStart(line string) (string, bool) {
	if rest, ok := strings.CutPrefix(line, "- "); ok {
		return rest, true
	}
	i := 0
	for i < len(line) && isDigit(line[i]) {
		i++
	}
	if i > 0 && strings.HasPrefix(line[i:], ". ") {
		return line[i+2:], true
	}
	return "", false
}

// addForeign keeps the lines of a summary another tool wrote: the part
// after its "Summary:" line when it has one.
func (x *extraction) addForeign(i int, text string) {
	x.prevMsgs++
	body := text
	if _, after, ok := strings.Cut(text, "\nSummary:"); ok {
		body = after
	}
	for _, line := range strings.Split(body, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, foreignSummaryPrefix) ||
			strings.HasPrefix(l, "If you need specific details from before compaction") ||
			strings.HasPrefix(l, "Please continue the conversation from where we left") {
			continue // the harness's instructions, not the story
		}
		l = strings.TrimSpace(strings.TrimPrefix(l, "- "))
		if l != "" {
			x.earlier = append(x.earlier, clip(l, 400))
			x.scanText(i, l, weightText)
		}
	}
}

// inputKey is the telling part of a call's input: the command, the path,
// the pattern, ... or else the input as a readable call.
func inputKey(in *toolInput, parsed bool, raw []byte) string {
	if parsed {
		if cmd := in.command(); cmd != "" {
			if p := in.path(); p != "" && !strings.ContainsAny(cmd, " \t") {
				return cmd + " " + p
			}
			return clip(cmd, 120)
		}
		if p := in.path(); p != "" {
			if in.Pattern != "" {
				return clip(in.Pattern, 60) + " in " + p
			}
			return p
		}
		for _, s := range []string{in.Pattern, in.Query, in.URL, in.Description, in.Prompt} {
			if s != "" {
				return clip(s, 120)
			}
		}
		if len(in.Todos) > 0 {
			return fmt.Sprintf("%d todos", len(in.Todos))
		}
	}
	return clip(callArgs(raw, 60), 120)
}

// maxTodos bounds the todo list in a summary; done items go first.
const maxTodos = 30

func renderTodos(todos []todo) []string {
	var out []string
	done := 0
	for _, t := range todos {
		if t.Status == "completed" || t.Status == "done" {
			done++
		}
	}
	skip := min(done, max(len(todos)-maxTodos, 0))
	if skip > 0 {
		out = append(out, fmt.Sprintf("[x] (%d earlier done items)", skip))
	}
	for _, t := range todos {
		if skip > 0 && (t.Status == "completed" || t.Status == "done") {
			skip--
			continue
		}
		if len(out) > maxTodos {
			break
		}
		text := t.Content
		if text == "" {
			text = t.Title
		}
		mark := "[ ]"
		switch t.Status {
		case "completed", "done":
			mark = "[x]"
		case "in_progress":
			mark = "[~]"
		}
		out = append(out, mark+" "+clip(text, 160))
	}
	return out
}

// item is one candidate line of the summary.
type item struct {
	sec    int
	text   string
	weight float64 // importance; must items are kept first
	must   bool
	order  int  // position in its section
	inline bool // joined with the other inline items of its group on one line
	drop   bool // left out whatever the budget
	share  int  // when > 0, the items of its section and group take at most budget/share tokens
	group  string
	tokens int
}

// candidates builds every line the summary could hold.
func (x *extraction) candidates(base string) []item {
	items := make([]item, 0, len(x.requests)+len(x.earlier)+min(len(x.calls), maxCallItems+maxErrorItems)+len(x.terms)/2+64)
	n := 0
	add := func(it item) {
		it.order = n
		n++
		items = append(items, it)
	}
	for _, r := range x.requests {
		add(item{sec: secRequests, text: r, must: true})
	}
	for i, l := range x.earlier {
		// Its start (the request) and its end (pending work, current work,
		// next step) matter most; the middle is detail.
		w := 0.45 - float64(i)*1e-4
		if i < 5 || i >= len(x.earlier)-30 {
			w = 0.6 - float64(i)*1e-4
		}
		add(item{sec: secEarlier, text: l, weight: w, share: 4})
	}
	for s := range x.prev {
		for _, l := range x.prev[s] {
			if s == secState && len(x.texts) > 0 || s == secIdents {
				continue // the new state replaces the old; names are ranked anew
			}
			if p, rest, ok := strings.Cut(l, ": "); ok && s == secFiles && strings.HasPrefix(p, "/") {
				l = relTo(p, base) + ": " + rest
			}
			add(item{sec: s, text: l, weight: 0.55})
		}
	}
	for _, d := range x.decisions() {
		add(item{sec: secGoals, text: d.text, weight: 0.35 + 0.3*d.recency})
	}
	for _, f := range x.fileItems(base) {
		add(f)
	}
	for _, id := range x.identItems() {
		add(id)
	}
	for _, t := range x.toolItems(base) {
		add(t)
	}
	for _, e := range x.errorItems(base) {
		add(e)
	}
	for _, s := range x.stateItems() {
		add(s)
	}
	return items
}

type decision struct {
	text    string
	recency float64
}

// lowerBuf lowers strings into one buffer for matching them against
// lower-case ASCII words (decisionWords, planWords, nextWords): ASCII
// letters lowered, the two letters outside ASCII whose lower case is
// ASCII (U+0130 İ and the Kelvin sign) written as that lower case, every
// other byte as it is; so a word is found wherever strings.ToLower(s) has
// it (TestLowerBufFindsWhatToLowerFinds), and no string is made for each
// sentence of a long history. The string that of returns is valid until
// its next call.
type lowerBuf struct{ b []byte }

func (l *lowerBuf) of(s string) string {
	l.b = l.b[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == 0xc4 && strings.HasPrefix(s[i:], "\u0130"):
			c, i = 'i', i+1
		case c == 0xe2 && strings.HasPrefix(s[i:], "\u212a"):
			c, i = 'k', i+2
		}
		l.b = append(l.b, c)
	}
	return unsafe.String(unsafe.SliceData(l.b), len(l.b))
}

// decisionWords mark a sentence that states a decision or a finding.
var decisionWords = []string{
	"because", "instead", "rather than", "decided", "decide ", "the problem is", "the issue is",
	"root cause", "the cause", "the fix is", "the fix:", "turns out", "the bug is", "so that",
	"approach", "chose", "we need to", "must ", "should ", "the reason", "which means", "this means",
}

// decisions returns the assistant's sentences that state a decision or a
// finding, each once.
func (x *extraction) decisions() []decision {
	var out []decision
	seen := map[string]bool{}
	var lower lowerBuf
	for k, at := range x.texts {
		rec := float64(k+1) / float64(len(x.texts))
		for s := range sentences(at.text) {
			l := lower.of(s)
			hit := false
			for _, w := range decisionWords {
				if strings.Contains(l, w) {
					hit = true
					break
				}
			}
			if !hit || utf8.RuneCountInString(s) < 25 || strings.HasSuffix(s, ":") {
				continue
			}
			s = clip(s, 300)
			if seen[s] {
				continue
			}
			seen[s] = true
			out = append(out, decision{s, rec})
		}
	}
	return out
}

// sentences yields the sentences and lines of text, skipping code
// blocks, as substrings of it (a list of each text's lines and one of its
// sentences were 2.3 MB for a compaction of 10 MB of OpenHands' turns).
func sentences(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		inCode := false
		for line := range strings.SplitSeq(text, "\n") {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, "```") {
				inCode = !inCode
				continue
			}
			if inCode || t == "" {
				continue
			}
			t = strings.TrimLeft(t, "-*#> ")
			start := 0
			for j := 0; j < len(t); j++ {
				c := t[j]
				if (c == '.' || c == '!' || c == '?') && j+1 < len(t) && t[j+1] == ' ' && j-start > 20 {
					if !yield(strings.TrimSpace(t[start : j+1])) {
						return
					}
					start = j + 2
				}
			}
			if rest := strings.TrimSpace(t[min(start, len(t)):]); rest != "" {
				if !yield(rest) {
					return
				}
			}
		}
	}
}

// fileState is what happened to one file.
type fileState struct {
	path                   string
	read, created, deleted bool
	modified               int
	gists                  []string
	last                   int // index of the last call that touched it
	prevLine               string
}

func (x *extraction) files() []*fileState {
	if x.fileList != nil {
		return x.fileList
	}
	byPath := map[string]*fileState{}
	var order []*fileState
	get := func(p string) *fileState {
		f := byPath[p]
		if f == nil {
			f = &fileState{path: p}
			byPath[p] = f
			order = append(order, f)
		}
		return f
	}
	known := func(p string) bool { return byPath[p] != nil }
	for ci, c := range x.calls {
		if c.in == nil || !c.answered || c.failed {
			continue
		}
		for _, op := range fileOps(c.name, c.in, known) {
			f := get(op.path)
			f.last = ci
			switch op.kind {
			case opRead:
				f.read = true
			case opCreated:
				f.created = true
				f.deleted = false
			case opModified:
				f.modified++
				if g := editGist(c.in); g != "" {
					f.gists = append(f.gists, g)
				}
			case opDeleted:
				f.deleted = true
			}
		}
	}
	if order == nil {
		order = []*fileState{}
	}
	x.fileList = order
	return order
}

// editGist is the change an edit makes, in a few words.
func editGist(in *toolInput) string {
	old, nw := in.OldString, in.NewString
	if old == "" && nw == "" {
		old, nw = in.OldStr, in.NewStr
	}
	if old == "" && nw == "" {
		return ""
	}
	o, n := firstChange(old, nw)
	switch {
	case o == "" && n == "":
		return ""
	case o == "":
		return "added `" + clip(n, 70) + "`"
	case n == "":
		return "removed `" + clip(o, 70) + "`"
	}
	return "`" + clip(o, 60) + "` → `" + clip(n, 60) + "`"
}

// firstChange returns the first line of old and of new, after their common
// leading and trailing lines, that has content ("" for none).
func firstChange(old, nw string) (string, string) {
	a, b := strings.Split(old, "\n"), strings.Split(nw, "\n")
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	j, k := len(a), len(b)
	for j > i && k > i && a[j-1] == b[k-1] {
		j--
		k--
	}
	return firstContent(a[i:j]), firstContent(b[i:k])
}

func firstContent(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			return strings.ReplaceAll(t, "`", "'")
		}
	}
	return ""
}

// relTo returns p relative to base when it is under it.
func relTo(p, base string) string {
	if base != "" {
		if rel, ok := strings.CutPrefix(p, base); ok && rel != "" {
			return rel
		}
	}
	return p
}

// basePrefix starts the line that names the directory relative paths are
// under.
const basePrefix = "Paths are relative to "

// fileItems returns the items of the files section: the base directory,
// the files the tools touched, then the other paths named (see
// otherPaths).
func (x *extraction) fileItems(base string) []item {
	var items []item
	if base != "" {
		items = append(items, item{sec: secFiles, text: basePrefix + base, must: true})
	}
	listed := map[string]bool{}
	nc := max(len(x.calls), 1)
	for _, f := range x.files() {
		listed[f.path] = true
		items = append(items, fileItem(f, base, nc))
	}
	for _, p := range x.otherPaths(base, listed) {
		st := x.terms[p]
		if st.said {
			items = append(items, item{sec: secFiles, text: relTo(p, base), weight: 0.55 + 0.1*min(st.score/10, 1), inline: true, group: "Also named: "})
		} else {
			items = append(items, item{sec: secFiles, text: relTo(p, base), weight: 0.2 + 0.1*min(st.score, 1), inline: true, group: "In tool output: ", share: 20})
		}
	}
	return items
}

// fileItem is the line of a file the tools touched: what was done to it,
// weighted by what and how late (nc is the number of calls).
func fileItem(f *fileState, base string, nc int) item {
	var what []string
	w := 0.45
	if f.created {
		what = append(what, "created")
		w = 0.8
	}
	if f.modified > 0 {
		s := "modified"
		if f.modified > 1 {
			s += fmt.Sprintf(" %d×", f.modified)
		}
		if len(f.gists) > 0 {
			g := f.gists[len(f.gists)-1:]
			s += " (" + strings.Join(g, "; ") + ")"
		}
		what = append(what, s)
		w = 0.8
	}
	if f.deleted {
		what = append(what, "deleted")
		w = 0.8
	}
	if f.read && len(what) == 0 {
		what = append(what, "read")
	}
	w += 0.15 * float64(f.last+1) / float64(nc)
	return item{sec: secFiles, text: relTo(f.path, base) + ": " + strings.Join(what, ", "), weight: w}
}

// otherPaths returns the paths the user and the assistant named, or tool
// output showed, without a tool touching them (not listed): the said ones
// first in their order, then tool output's most named; at most
// maxOtherPaths of each.
func (x *extraction) otherPaths(base string, listed map[string]bool) []string {
	rel := map[string]bool{}
	names := map[string]bool{}
	for p := range listed {
		rel[relTo(p, base)] = true
		names[p[strings.LastIndexByte(p, '/')+1:]] = true
	}
	var others []string
	for p, st := range x.terms {
		if st.kind != termPath || listed[p] || rel[relTo(p, base)] {
			continue
		}
		if !strings.Contains(p, "/") && names[p] {
			continue // the bare name of a listed file
		}
		if !st.said && (strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/")) {
			continue // a diff header's side
		}
		if !strings.HasPrefix(p, "/") && underListed(p, listed) {
			continue // a listed file, relative to another directory
		}
		others = append(others, p)
	}
	slices.SortFunc(others, func(a, b string) int {
		sa, sb := x.terms[a], x.terms[b]
		switch {
		case sa.said && !sb.said:
			return -1
		case sb.said && !sa.said:
			return 1
		case sa.said:
			return sa.first - sb.first
		}
		// Tool output: the most named first.
		if sa.score != sb.score {
			if sa.score > sb.score {
				return -1
			}
			return 1
		}
		return sa.first - sb.first
	})
	// A bounded number of candidates: what would not fit anyway is not
	// built (the latest named, the most shown).
	said := 0
	for _, p := range others {
		if x.terms[p].said {
			said++
		}
	}
	if said > maxOtherPaths {
		others = others[said-maxOtherPaths:]
		said = maxOtherPaths
	}
	if len(others) > said+maxOtherPaths {
		others = others[:said+maxOtherPaths]
	}
	return others
}

// underListed reports whether the relative path p names the end of a
// listed path.
func underListed(p string, listed map[string]bool) bool {
	p = strings.TrimPrefix(p, "./")
	for l := range listed {
		if strings.HasSuffix(l, "/"+p) {
			return true
		}
	}
	return false
}

// commonDir returns the directory (ending in "/") whose factoring out saves
// the most characters (its length × the paths under it), when at least two
// paths are under it and it is long enough to be worth it; else "".
func commonDir(paths []string) string {
	if len(paths) < 2 {
		return ""
	}
	count := map[string]int{}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
			continue
		}
		for i := 1; i < len(p); i++ {
			if p[i] == '/' {
				count[p[:i+1]]++
			}
		}
	}
	best := ""
	for dir, n := range count {
		gain, bestGain := n*len(dir), count[best]*len(best)
		if n >= 2 && (gain > bestGain || gain == bestGain && dir < best) {
			best = dir
		}
	}
	if len(best) < 8 {
		return ""
	}
	return best
}

// identItems ranks the identifiers by centrality: the weighted count of
// the messages that name them, more for the user's and the assistant's
// words than for tool output, and more for recent ones.
func (x *extraction) identItems() []item {
	type ranked struct {
		name  string
		score float64
		first int
	}
	var rs []ranked
	for name, st := range x.terms {
		if st.kind != termIdent || (!st.said && st.score < 2*weightResult) {
			continue
		}
		rec := 0.5
		if x.msgs > 0 {
			rec = 0.5 + 0.5*float64(st.lastMsg+1)/float64(x.msgs)
		}
		rs = append(rs, ranked{name, st.score * rec, st.first})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return a.first - b.first
	})
	var items []item
	said, heard := 0, 0
	for _, r := range rs {
		// Named by the user or the assistant first; the names only tool
		// output shows (in two results or more) fill what room is left.
		var w float64
		if x.terms[r.name].said {
			w = 0.4 + 0.5/(1+float64(said)/25)
			said++
		} else {
			w = 0.15 + 0.1/(1+float64(heard)/25)
			heard++
		}
		items = append(items, item{sec: secIdents, text: r.name, weight: w, inline: true, share: 5})
	}
	return items
}

// shortKey writes the paths of a call's key relative to base.
func shortKey(key, base string) string {
	if base == "" || !strings.Contains(key, base) {
		return key
	}
	return strings.ReplaceAll(key, base, "")
}

func (x *extraction) toolItems(base string) []item {
	if len(x.calls) == 0 {
		return nil
	}
	items := []item{x.callTally()}
	// One line per distinct call (file operations are under File
	// operations), with how often it ran and its last result.
	nc := float64(len(x.calls))
	for _, g := range x.callGroups() {
		items = append(items, g.item(base, nc))
	}
	return items
}

// callTally is the line that counts the calls by tool, the most called
// first, with their failures.
func (x *extraction) callTally() item {
	type tally struct {
		name         string
		calls, fails int
	}
	var ts []*tally
	byName := map[string]*tally{}
	for _, c := range x.calls {
		t := byName[c.name]
		if t == nil {
			t = &tally{name: c.name}
			byName[c.name] = t
			ts = append(ts, t)
		}
		t.calls++
		if c.failed {
			t.fails++
		}
	}
	slices.SortStableFunc(ts, func(a, b *tally) int { return b.calls - a.calls })
	var parts []string
	for _, t := range ts {
		p := fmt.Sprintf("%s ×%d", t.name, t.calls)
		if t.fails > 0 {
			p += fmt.Sprintf(" (%d failed)", t.fails)
		}
		parts = append(parts, p)
	}
	return item{sec: secTools, text: plural(len(x.calls), "call") + ": " + strings.Join(parts, ", "), must: true}
}

// callGroup is the calls of one tool with one key (command, path).
type callGroup struct {
	c        *call
	n, fails int
	last     *call
	lastAt   int
	firstAt  int
}

// callGroups returns the groups of the calls that are not file operations
// that succeeded or todo updates, in order of their first call: the
// maxCallItems most recent only (older ones would not fit anyway).
func (x *extraction) callGroups() []*callGroup {
	gs := make([]*callGroup, 0, len(x.calls)) // at most a group a call: no growing
	byKey := make(map[string]*callGroup, len(x.calls))
	for ci, c := range x.calls {
		if c.fileOp && !c.failed || c.todos {
			continue
		}
		k := c.name + "\x00" + c.key
		g := byKey[k]
		if g == nil {
			g = &callGroup{c: c, firstAt: ci}
			byKey[k] = g
			gs = append(gs, g)
		}
		g.n++
		if c.failed {
			g.fails++
		}
		g.last, g.lastAt = c, ci
	}
	if len(gs) > maxCallItems {
		slices.SortStableFunc(gs, func(a, b *callGroup) int { return a.lastAt - b.lastAt })
		gs = gs[len(gs)-maxCallItems:]
	}
	return gs
}

// item is the group's line: the call, how often it ran, its last result;
// weighted by how late it ran (nc is the number of calls).
func (g *callGroup) item(base string, nc float64) item {
	s := g.c.name
	if g.c.key != "" {
		s += " `" + strings.ReplaceAll(shortKey(g.c.key, base), "`", "'") + "`"
	}
	if g.n > 1 {
		s += fmt.Sprintf(" ×%d", g.n)
		if g.fails > 0 {
			s += fmt.Sprintf(" (%d failed)", g.fails)
		}
	}
	l := g.last
	switch {
	case !l.answered:
		s += " → no result"
	case l.hidden && !l.failed:
		s += " → done"
	case l.failed:
		s += " → failed"
	default:
		s += " → ok"
	}
	if l.answered && l.result != "" {
		s += ": " + clip(shortKey(l.result, base), 120)
	}
	w := 0.25 + 0.25*float64(g.lastAt+1)/nc
	if g.n > 1 {
		w += 0.05
	}
	return item{sec: secTools, text: s, weight: w}
}

// maxCallItems and maxErrorItems bound the candidate lines of a long
// history (the most recent are kept as candidates).
const (
	maxCallItems  = 300
	maxErrorItems = 200
	maxOtherPaths = 200
)

type fixNote struct {
	text  string
	fixed bool
}

// fix returns what followed failed call i: the same call succeeding later,
// or the assistant's next words; fixed reports whether it was fixed.
func (x *extraction) fix(i int, base string) (string, bool) {
	if f, ok := x.fixes[i]; ok {
		return f.text, f.fixed
	}
	if x.fixes == nil {
		x.fixes = map[int]fixNote{}
	}
	text, fixed := x.findFix(i, base)
	x.fixes[i] = fixNote{text, fixed}
	return text, fixed
}

func (x *extraction) findFix(i int, base string) (string, bool) {
	c := x.calls[i]
	if x.successes == nil {
		x.successes = map[string][]int{}
		for j, d := range x.calls {
			if d.answered && !d.failed {
				k := d.name + "\x00" + d.key
				x.successes[k] = append(x.successes[k], j)
			}
		}
	}
	later := x.successes[c.name+"\x00"+c.key]
	if k, _ := slices.BinarySearch(later, i+1); k < len(later) {
		j := later[k]
		s := "fixed: succeeded later"
		var changed []string
		more := false
		for _, d := range x.calls[i+1 : j] {
			if !d.answered || d.failed {
				continue
			}
			for _, p := range d.writes {
				if !slices.Contains(changed, relTo(p, base)) {
					if len(changed) == 3 {
						more = true
						break
					}
					changed = append(changed, relTo(p, base))
				}
			}
			if more {
				break
			}
		}
		if len(changed) > 0 {
			s += " after changes to " + strings.Join(changed, ", ")
			if more {
				s += " and more"
			}
		}
		return s, true
	}
	// A later run of the same command (its first two words: go test,
	// npm run) succeeding after files changed.
	if head := c.head; head != "" {
		for j := i + 1; j < len(x.calls); j++ {
			d := x.calls[j]
			if d.head != head || d.name != c.name || !d.answered || d.failed {
				continue
			}
			var changed []string
			for _, e := range x.calls[i+1 : j] {
				if e.answered && !e.failed {
					for _, p := range e.writes {
						if r := relTo(p, base); !slices.Contains(changed, r) && len(changed) < 3 {
							changed = append(changed, r)
						}
					}
				}
			}
			if len(changed) > 0 {
				return "fixed: `" + strings.ReplaceAll(clip(shortKey(d.key, base), 60), "`", "'") + "` succeeded after changes to " + strings.Join(changed, ", "), true
			}
		}
	}
	// The assistant's words right after the result.
	if c.resultMsg >= 0 {
		for at := c.resultMsg + 1; at <= c.resultMsg+2; at++ {
			if t, ok := x.textOf(at); ok {
				for s := range sentences(t) {
					return "then: " + clip(s, 200), false
				}
			}
		}
	}
	return "still open", false
}

func (x *extraction) errorItems(base string) []item {
	var items []item
	seen := map[string]bool{}
	nc := float64(len(x.calls))
	var failed []int
	for i, c := range x.calls {
		if c.failed {
			failed = append(failed, i)
		}
	}
	if len(failed) > maxErrorItems {
		failed = failed[len(failed)-maxErrorItems:]
	}
	for k, r := range x.reported {
		s := "Reported: " + keyLine(r, true, 200)
		if !seen[s] {
			seen[s] = true
			items = append(items, item{sec: secErrors, text: s, weight: 0.7 + 0.1*float64(k+1)/float64(len(x.reported))})
		}
	}
	for _, i := range failed {
		c := x.calls[i]
		s := c.name
		if c.key != "" {
			s += " `" + strings.ReplaceAll(clip(shortKey(c.key, base), 100), "`", "'") + "`"
		}
		s += " failed"
		if c.result != "" {
			s += ": " + clip(shortKey(c.result, base), 200)
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		f, fixed := x.fix(i, base)
		w := 0.75 + 0.1*float64(i+1)/nc
		if !fixed {
			w += 0.05
		}
		items = append(items, item{sec: secErrors, text: s + " → " + f, weight: w})
	}
	return items
}

// commandHead is the first two words of a shell command ("go test", "npm
// run"), after a leading "cd DIR &&"; "" when the second word is an
// option, a path or missing (python -c, ls src: no family of runs). It
// returns a part of key.
func commandHead(key string) string {
	if strings.HasPrefix(key, "cd ") {
		if _, rest, ok := strings.Cut(key, "&&"); ok {
			key = rest
		}
	}
	key = strings.TrimLeft(key, " \t")
	end1 := strings.IndexAny(key, " \t")
	if end1 < 0 {
		return ""
	}
	rest := strings.TrimLeft(key[end1:], " \t")
	if rest == "" || strings.IndexByte("-/.~'\"$|&;<>", rest[0]) >= 0 {
		return ""
	}
	end2 := strings.IndexAny(rest, " \t")
	if end2 < 0 {
		end2 = len(rest)
	}
	return key[:len(key)-len(rest)+end2]
}

func (x *extraction) openErrors() int {
	n := 0
	for i, c := range x.calls {
		if c.failed {
			if _, ok := x.fix(i, ""); !ok {
				n++
			}
		}
	}
	return n
}

// nextWords mark a sentence that announces what comes next.
var nextWords = []string{
	"next", "i'll", "i will", "let me", "remaining", "todo", "still need",
	"need to", "going to", "after that", "left to", "will now",
}

// planWords, in the text around a numbered list, make it a plan.
var planWords = []string{"plan", "steps", "todo", "to do", "next", "remaining", "left to", "will "}

var planLine = regexp.MustCompile(`^\s*(?:[-*] \[[ xX~]\]|\d+[.)]) +\S`)

func (x *extraction) stateItems() []item {
	var items []item
	current := ""
	todos := renderTodos(x.todos)
	for _, t := range todos {
		if c, ok := strings.CutPrefix(t, "[~] "); ok {
			current = c
			break
		}
	}
	switch {
	case current != "":
		items = append(items, item{sec: secState, text: "Current task (in progress on the todo list): " + current, must: true})
	case len(x.requests) > 0:
		items = append(items, item{sec: secState, text: "Current task: the latest request (the last one under User requests).", must: true})
	}
	if len(todos) > 0 {
		items = append(items, item{sec: secState, text: "Todo list:\n" + strings.Join(todos, "\n"), must: true})
	}
	// The plan: the checklist or numbered list of the latest assistant
	// text that has one.
	for k := len(x.texts) - 1; k >= 0; k-- {
		var plan []string
		checklist, announced, steps := false, false, true
		var lower lowerBuf
		for l := range strings.SplitSeq(x.texts[k].text, "\n") {
			if planLine.MatchString(l) {
				plan = append(plan, clip(l, 200))
				checklist = checklist || strings.Contains(l, "[ ]") || strings.Contains(l, "[x]") || strings.Contains(l, "[X]")
				// Short items without arrows read as steps, not as a
				// chain of reasoning.
				steps = steps && utf8.RuneCountInString(strings.TrimSpace(l)) <= 100 && !strings.Contains(l, "->") && !strings.Contains(l, "=>")
				continue
			}
			low := lower.of(l)
			for _, w := range planWords {
				if strings.Contains(low, w) {
					announced = true
				}
			}
		}
		if len(plan) >= 2 && (checklist || announced || steps) {
			if len(plan) > 20 {
				plan = plan[:20]
			}
			items = append(items, item{sec: secState, text: "Plan:\n" + strings.Join(plan, "\n"), weight: 0.9})
			break
		}
	}
	if n := x.openErrors(); n > 0 {
		items = append(items, item{sec: secState, text: fmt.Sprintf("%d error(s) still open (see Errors and fixes).", n), must: true})
	}
	if len(x.texts) > 0 {
		last := x.texts[len(x.texts)-1].text
		items = append(items, item{sec: secState, text: "Last assistant message:\n" + shortenLines(last, 1500), must: true})
		// Next steps announced in the last few texts.
		var next []string
		seen := map[string]bool{}
		var lower lowerBuf
		for k := max(0, len(x.texts)-3); k < len(x.texts); k++ {
			for s := range sentences(x.texts[k].text) {
				l := lower.of(s)
				for _, w := range nextWords {
					if strings.Contains(l, w) && !seen[s] && !strings.Contains(last, s) {
						seen[s] = true
						next = append(next, clip(s, 240))
						break
					}
				}
			}
		}
		for k, s := range next {
			items = append(items, item{sec: secState, text: "Next: " + s, weight: 0.7 + 0.2*float64(k+1)/float64(len(next))})
		}
	}
	return items
}

// shortenLines keeps text's lines up to about max characters: the first
// part and the last part around a note.
func shortenLines(text string, max int) string {
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	head := runePrefix(text, max*2/3)
	tail := runeSuffix(text, max/3)
	return strings.TrimRight(head, " \n") + " […] " + strings.TrimLeft(tail, " \n")
}

// render fills the budget by importance and writes the sections.
func (x *extraction) render(tc tokens.Counter, budget, maxChars int) string {
	base := x.pathBase()
	header := x.header()
	items := x.candidates(base)
	requests := 0
	for i := range items {
		if items[i].sec == secRequests {
			items[i].text = strings.TrimSpace(items[i].text)
			requests += tc.Count(items[i].text) + 2
		}
	}
	// A short middle gets a short summary: about half of what the user and
	// the assistant wrote (at 4 bytes a token) and a fortieth of the tool
	// output, besides the requests kept verbatim.
	budget = min(budget, max(x.size/8+x.outSize/160, shortBudget)+requests+100)
	x.fitRequests(tc, items, budget)

	used := tc.Count(SummaryTitle+"\n\n"+header+"\n") + 2
	for s := range numSections {
		if required(s) {
			used += tc.Count("\n## "+sectionTitles[s]+"\n") + 3
		}
	}
	rank := rankItems(items)
	keep := chooseItems(tc, items, rank, used, budget, maxChars)
	return x.fit(tc, header, items, rank, keep, budget, maxChars)
}

// pathBase returns the directory the summary's paths are written relative
// to: the common directory of the files seen, the paths said and the
// previous summary's files.
func (x *extraction) pathBase() string {
	var paths []string
	for _, f := range x.files() {
		paths = append(paths, f.path)
	}
	for p, st := range x.terms {
		if st.kind == termPath && st.said {
			paths = append(paths, p)
		}
	}
	for _, l := range x.prev[secFiles] {
		if p, _, ok := strings.Cut(l, ": "); ok && strings.HasPrefix(p, "/") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return commonDir(slices.Compact(paths))
}

// rankItems returns the indexes of items from the most important: must
// items first, then by weight; ties: later first.
func rankItems(items []item) []int {
	rank := make([]int, len(items))
	for i := range rank {
		rank[i] = i
	}
	slices.SortStableFunc(rank, func(a, b int) int {
		ia, ib := &items[a], &items[b]
		if ia.must != ib.must {
			if ia.must {
				return -1
			}
			return 1
		}
		if ia.weight != ib.weight {
			if ia.weight > ib.weight {
				return -1
			}
			return 1
		}
		return ib.order - ia.order
	})
	return rank
}

// chooseItems takes items in rank order while they fit the budget (used
// tokens already spent), each group within its share, the text within
// maxChars (0: no cap) with room for the headings: must items always. It
// returns which items are kept; a duplicate text in a group is kept once.
func chooseItems(tc tokens.Counter, items []item, rank []int, used, budget, maxChars int) []bool {
	keep := make([]bool, len(items))
	seen := map[string]bool{}
	secUsed := [numSections]bool{}
	chars := 0
	capUsed := map[capKey]int{}
	for _, k := range rank {
		it := &items[k]
		if it.drop || seen[it.group+"\x00"+it.text] {
			continue
		}
		cost := tc.Count(it.text) + 2
		extra := 0
		if !secUsed[it.sec] && !required(it.sec) {
			extra = tc.Count("\n## "+sectionTitles[it.sec]+"\n") + 1
		}
		if !it.must && used+cost+extra > budget {
			continue
		}
		if it.share > 0 {
			k := capKey{it.sec, it.group}
			if capUsed[k]+cost > budget/it.share {
				continue
			}
			capUsed[k] += cost
		}
		if maxChars > 0 && !it.must && chars+utf8.RuneCountInString(it.text)+4 > maxChars-600 {
			continue
		}
		seen[it.group+"\x00"+it.text] = true
		keep[k] = true
		secUsed[it.sec] = true
		used += cost + extra
		chars += utf8.RuneCountInString(it.text) + 4
	}
	return keep
}

// fit writes the kept items and makes the text fit budget tokens and
// maxChars characters (0: no cap): it drops the least important kept
// items, then, when what must stay is still too much, cuts the end.
func (x *extraction) fit(tc tokens.Counter, header string, items []item, rank []int, keep []bool, budget, maxChars int) string {
	out := x.write(header, items, keep)
	// Joined lines and separators can count a little differently: drop
	// the least important kept items until the whole fits.
	i := len(rank) - 1
	for i >= 0 {
		over := tc.Count(out) - budget
		overChars := 0
		if maxChars > 0 {
			overChars = utf8.RuneCountInString(out) - maxChars
		}
		if over <= 0 && overChars <= 0 {
			break
		}
		for ; i >= 0 && (over > 0 || overChars > 0); i-- {
			k := rank[i]
			if keep[k] && !items[k].must {
				keep[k] = false
				over -= tc.Count(items[k].text) + 1
				overChars -= utf8.RuneCountInString(items[k].text) + 2
			}
		}
		out = x.write(header, items, keep)
	}
	// What must stay can still be too much (many long requests, a long
	// todo list): cut the end, never exceed the budget.
	for n := tc.Count(out); n > budget; n = tc.Count(out) {
		keep := utf8.RuneCountInString(out) * budget / n * 95 / 100
		out = strings.TrimRight(runePrefix(out, max(keep-1, 0)), " \n") + "…"
	}
	if maxChars > 0 && utf8.RuneCountInString(out) > maxChars {
		out = strings.TrimRight(runePrefix(out, maxChars-1), " \n") + "…"
	}
	return out
}

type capKey struct {
	sec   int
	group string
}

// fitRequests shortens the oldest long requests while the requests take
// more than two thirds of the budget.
func (x *extraction) fitRequests(tc tokens.Counter, items []item, budget int) {
	var idx []int
	total := 0
	for i := range items {
		if items[i].sec == secRequests {
			idx = append(idx, i)
			items[i].tokens = tc.Count(items[i].text)
			total += items[i].tokens
		}
	}
	limit := budget * 55 / 100
	for _, i := range idx {
		if total <= limit {
			return
		}
		if items[i].tokens < 200 {
			continue
		}
		short := shortenLines(items[i].text, 600)
		n := tc.Count(short)
		total -= items[i].tokens - n
		items[i].text, items[i].tokens = short, n
	}
	for _, i := range idx { // still too much: all of them shorter
		if total <= limit {
			return
		}
		short := shortenLines(items[i].text, 200)
		n := tc.Count(short)
		total -= items[i].tokens - n
		items[i].text, items[i].tokens = short, n
	}
	// Still too much: leave out the oldest but the first.
	if len(idx) < 3 {
		return
	}
	for _, i := range idx[1 : len(idx)-1] {
		if total <= limit {
			break
		}
		items[i].drop = true
		total -= items[i].tokens
		x.leftOut++
	}
}

func (x *extraction) header() string {
	failed := 0
	for _, c := range x.calls {
		if c.failed {
			failed++
		}
	}
	s := fmt.Sprintf("%s compacted: %s, %s, %s (%d failed).", plural(x.msgs, "earlier message"),
		plural(x.users, "user request"), plural(x.assistants, "assistant message"), plural(len(x.calls), "tool call"), failed)
	if x.prevMsgs > 0 {
		s += " An earlier summary is merged in."
	}
	if stableArchive(x.archive) {
		s += " " + archiveLine(x.archive)
	}
	return s
}

// write renders the kept items, section by section, in their order.
func (x *extraction) write(header string, items []item, keep []bool) string {
	var b strings.Builder
	b.WriteString(SummaryTitle)
	b.WriteString("\n\n")
	b.WriteString(header)
	b.WriteByte('\n')
	for s := range numSections {
		var lines []string
		groups := map[string][]string{}
		var groupOrder []string
		num := 0
		for i := range items {
			it := &items[i]
			if !keep[i] || it.sec != s {
				continue
			}
			if it.inline {
				if _, ok := groups[it.group]; !ok {
					groupOrder = append(groupOrder, it.group)
					lines = append(lines, "\x00"+it.group)
				}
				groups[it.group] = append(groups[it.group], it.text)
				continue
			}
			if s == secRequests {
				if num == 1 && x.leftOut > 0 {
					lines = append(lines, fmt.Sprintf("(%s left out here for room)", plural(x.leftOut, "later request")))
				}
				num++
				lines = append(lines, fmt.Sprintf("%d. %s", num, indent(it.text)))
				continue
			}
			lines = append(lines, "- "+indent(it.text))
		}
		if len(lines) == 0 && !required(s) {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n", sectionTitles[s])
		if len(lines) == 0 {
			b.WriteString("- none\n")
		}
		for _, l := range lines {
			if g, ok := strings.CutPrefix(l, "\x00"); ok {
				l = "- " + g + strings.Join(groups[g], ", ")
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// indent makes the continuation lines of a multi-line item part of it.
func indent(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			lines[i] = ""
		} else {
			lines[i] = "   " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// plural returns "1 call", "2 calls".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}
