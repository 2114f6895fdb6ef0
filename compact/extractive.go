package compact

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
)

// DefaultMaxSummaryChars bounds the summary Extractive writes, in
// characters (about 2,500 tokens).
const DefaultMaxSummaryChars = 10_000

// Extractive is the offline Summarizer, and Compact's default: it needs no
// model and writes the same summary for the same messages every time. It
// fills the five sections of seed 002 from the messages themselves:
//
//   - Goals and key decisions: the user's requests (the first one at most
//     length) and the first sentence of the assistant's statements.
//   - File operations: the paths read, created, modified and deleted,
//     taken from the inputs of successful tool calls (file_path, path,
//     notebook_path, ... by tool name: Read, Write, Edit, str_replace_editor
//     commands, ...) and from simple shell commands (rm, touch, sed -i, cat,
//     redirections).
//   - Tool calls: a count per tool with its failures, then one line per
//     call: name, key input (command, path, pattern, ...), success or
//     failure and the key line of the result.
//   - Current state: the latest request, the latest todo list (a todos
//     input, as Claude Code's TodoWrite), the last assistant message, the
//     errors still open.
//   - Errors and fixes: each failed call with its error line, and what
//     followed: the same call succeeding later (after which files were
//     modified), or the assistant's next words.
//
// A tool result is a failure when it has is_error or messageStatus "error",
// starts with "Error:", or reports a non-zero exit code ("Exit code 2",
// <returncode>1</returncode>, {"exitCode":1}).
//
// A previous summary in the messages (see IsSummary) is merged in: its
// lines are carried into the matching sections, and its file lists are
// united with the new ones, so repeated compactions keep the start of the
// story. Each section has a share of MaxChars; where items do not fit, the
// oldest go first (the first user request and the newest items stay), and a
// line says how many were left out.
type Extractive struct {
	// MaxChars bounds the summary, in characters. Zero means
	// DefaultMaxSummaryChars.
	MaxChars int
}

// Summarize implements Summarizer. It fails only when ctx is done.
func (e Extractive) Summarize(ctx context.Context, req Request) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	max := e.MaxChars
	if max <= 0 {
		max = DefaultMaxSummaryChars
	}
	x := newExtraction()
	for i := range req.Messages {
		x.add(i, &req.Messages[i])
	}
	return x.render(req, max), nil
}

// Section headings, in order.
var sectionTitles = [...]string{
	"Goals and key decisions",
	"File operations",
	"Tool calls",
	"Current state",
	"Errors and fixes",
}

const (
	secGoals = iota
	secFiles
	secTools
	secState
	secErrors
)

// Shares of the budget per section, in percent.
var sectionShare = [...]int{25, 20, 25, 15, 15}

// call is one tool call and what came of it.
type call struct {
	msg       int
	name, id  string
	key       string // the telling part of the input
	in        toolInput
	parsed    bool
	answered  bool
	failed    bool
	result    string // key line of the result
	resultMsg int
	writes    []string // paths the call creates, modifies or deletes if it succeeds
	fileOp    bool     // the call reads or writes files
}

type extraction struct {
	calls []*call
	byID  map[string]*call

	requests   []string
	decisions  []string
	lastReq    string
	lastText   string
	lastTextAt int
	todos      string
	prev       [len(sectionTitles)][]string
	prevCount  int
	users      int
	assistants int

	texts     map[int]string   // assistant text by message index, for fixes
	fixes     map[int]fixNote  // memo of fix, by call index
	successes map[string][]int // indices of successful calls by name and key

	first, last time.Time
	msgs        int
}

func newExtraction() *extraction {
	return &extraction{byID: map[string]*call{}, texts: map[int]string{}, lastTextAt: -1}
}

var systemReminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

func (x *extraction) add(i int, m *agentctx.Message) {
	x.msgs++
	if t, ok := m.Timestamp(); ok {
		if x.first.IsZero() {
			x.first = t
		}
		x.last = t
	}
	if IsSummary(*m) {
		x.addPrevious(messageText(*m))
		return
	}
	switch m.Role {
	case agentctx.RoleTool:
		x.result(i, m.ToolCallID, m.Content, false, m.Status())
		return
	case agentctx.RoleAssistant:
		x.assistants++
	case agentctx.RoleUser:
		x.users++
	}

	var texts []string
	switch m.Content.Kind() {
	case agentctx.ContentText:
		texts = append(texts, m.Content.Text())
	case agentctx.ContentBlocks:
		for _, b := range m.Content.Blocks() {
			switch b.Type {
			case agentctx.BlockText:
				texts = append(texts, b.Text)
			case agentctx.BlockToolUse:
				x.call(i, b.ID, b.Name, b.Input)
			case agentctx.BlockToolResult:
				x.result(i, b.ToolUseID, b.Content, b.IsError, m.Status())
			}
		}
	}
	for _, tc := range m.ToolCalls {
		x.call(i, tc.ID, tc.Function.Name, []byte(tc.Function.Arguments))
	}
	var text string
	if len(texts) == 1 {
		text = texts[0]
	} else {
		text = strings.Join(texts, "\n")
	}
	if strings.Contains(text, "<system-reminder>") {
		text = systemReminder.ReplaceAllString(text, "")
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	switch m.Role {
	case agentctx.RoleAssistant:
		x.decisions = append(x.decisions, firstSentence(text))
		x.lastText, x.lastTextAt = text, i
		x.texts[i] = text
	case agentctx.RoleSystem:
		x.requests = append(x.requests, "System: "+clip(text, 400))
	default:
		limit := 400
		if len(x.requests) == 0 {
			limit = 1000
		}
		x.requests = append(x.requests, "User: "+clip(text, limit))
		x.lastReq = text
	}
}

func (x *extraction) call(i int, id, name string, input []byte) {
	c := &call{msg: i, id: id, name: name, resultMsg: -1}
	c.in, c.parsed = parseInput(input)
	c.key = inputKey(&c.in, c.parsed, input)
	if c.parsed {
		for _, op := range fileOps(name, &c.in, func(string) bool { return true }) {
			c.fileOp = true
			if op.kind != opRead && !slices.Contains(c.writes, op.path) {
				c.writes = append(c.writes, op.path)
			}
		}
	}
	if c.parsed && len(c.in.Todos) > 0 {
		x.todos = renderTodos(&c.in)
	}
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
	c.failed = resultFailed(content, isError, status)
	c.result = keyLine(resultText(content), c.failed, 160)
}

// addPrevious files the lines of an earlier summary under their sections.
func (x *extraction) addPrevious(text string) {
	x.prevCount++
	sec := -1
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.HasPrefix(line, "## ") {
			sec = sectionIndex(strings.TrimSpace(line[3:]))
			continue
		}
		if sec < 0 || strings.TrimSpace(line) == "" {
			continue
		}
		item := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if item == "" || item == "none" || strings.HasPrefix(item, "(") && strings.HasSuffix(item, "not shown)") {
			continue
		}
		x.prev[sec] = append(x.prev[sec], item)
	}
}

func sectionIndex(title string) int {
	for i, t := range sectionTitles {
		if strings.EqualFold(title, t) {
			return i
		}
	}
	return -1
}

// inputKey is the telling part of a call's input: the command, the path,
// the pattern, ... or else its JSON.
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
	if !utf8.Valid(raw) {
		return ""
	}
	return clip(string(raw), 80)
}

func renderTodos(in *toolInput) string {
	var parts []string
	for _, t := range in.Todos {
		status := t.Status
		if status == "" {
			status = "pending"
		}
		parts = append(parts, "["+strings.ReplaceAll(status, "_", " ")+"] "+clip(t.Content, 100))
	}
	return strings.Join(parts, "; ")
}

// firstSentence returns the first sentence (or line) of text, clipped.
func firstSentence(text string) string {
	line := firstLine(strings.TrimSpace(text))
	for i, r := range line {
		if (r == '.' || r == '!' || r == '?' || r == '。') && i > 20 {
			end := i + utf8.RuneLen(r)
			if end == len(line) || line[end] == ' ' || r == '。' {
				line = line[:end]
				break
			}
		}
	}
	return clip(line, 200)
}

// item is one line of a section.
type item struct {
	text  string
	prio  int // lower is kept first
	order int // position in the section
}

func (x *extraction) render(req Request, max int) string {
	var b strings.Builder
	b.WriteString(SummaryTitle)
	b.WriteString("\n\n")
	b.WriteString(x.header(req))
	b.WriteString("\n")
	budget := max - utf8.RuneCountInString(b.String())

	sections := [len(sectionTitles)][]item{
		secGoals:  x.goalItems(),
		secFiles:  x.fileItems(budget * sectionShare[secFiles] / 100),
		secTools:  x.toolItems(),
		secState:  x.stateItems(),
		secErrors: x.errorItems(),
	}
	for s, title := range sectionTitles {
		fmt.Fprintf(&b, "\n## %s\n", title)
		lines := selectItems(sections[s], budget*sectionShare[s]/100-len(title)-4)
		if len(lines) == 0 {
			b.WriteString("- none\n")
		}
		for _, l := range lines {
			b.WriteString("- ")
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (x *extraction) header(req Request) string {
	failed := 0
	for _, c := range x.calls {
		if c.failed {
			failed++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d earlier messages were compacted", x.msgs)
	if !x.first.IsZero() {
		fmt.Fprintf(&b, " (%s to %s)", x.first.UTC().Format(time.RFC3339), x.last.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ": %d from the user, %d from the assistant, %s (%d failed).", x.users, x.assistants, plural(len(x.calls), "tool call"), failed)
	if x.prevCount > 0 {
		b.WriteString(" An earlier summary is merged in.")
	}
	if req.Archive != "" {
		fmt.Fprintf(&b, " The original messages are archived in %s.", req.Archive)
	}
	return b.String()
}

func (x *extraction) goalItems() []item {
	var items []item
	for _, l := range x.prev[secGoals] {
		items = append(items, item{text: l, prio: 0})
	}
	for _, r := range x.requests {
		items = append(items, item{text: r, prio: 0})
	}
	for _, d := range x.decisions {
		items = append(items, item{text: "Assistant: " + d, prio: 1})
	}
	return number(items)
}

// basePrefix starts the line that names the directory relative paths in
// the file lists are under.
const basePrefix = "Under "

// fileItems unites the file lists of earlier summaries with the operations
// of the successful calls, and returns one item per kind (reads last in
// priority), within about budget characters. Paths under one common
// directory are listed relative to it.
func (x *extraction) fileItems(budget int) []item {
	var lists [numOps][]string
	seen := map[string]bool{}
	edits := map[string]int{}
	add := func(kind int, p string) {
		if p == "" {
			return
		}
		key := itoa(kind) + "\x00" + p
		if kind == opModified {
			edits[p]++
		}
		seen[p] = true
		if seen[key] {
			return
		}
		seen[key] = true
		lists[kind] = append(lists[kind], p)
	}
	prevBase := ""
	for _, l := range x.prev[secFiles] {
		if strings.HasPrefix(l, basePrefix) && strings.HasSuffix(l, "/:") {
			prevBase = strings.TrimSuffix(strings.TrimPrefix(l, basePrefix), ":")
			continue
		}
		name, rest, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		kind := slices.Index(opNames[:], strings.TrimSpace(name))
		if kind < 0 {
			continue
		}
		for _, p := range strings.Split(rest, ", ") {
			p = strings.TrimSpace(p)
			if i := strings.LastIndex(p, " ("); i > 0 && strings.HasSuffix(p, ")") {
				p = p[:i]
			}
			if p != "" && !strings.HasPrefix(p, "+") {
				if prevBase != "" && !strings.HasPrefix(p, "/") {
					p = prevBase + p
				}
				add(kind, p)
			}
		}
	}
	known := func(p string) bool { return seen[p] }
	for _, c := range x.calls {
		if !c.parsed || !c.answered || c.failed {
			continue
		}
		for _, op := range fileOps(c.name, &c.in, known) {
			add(op.kind, op.path)
		}
	}
	var all []string
	kinds := 0
	for _, paths := range lists {
		all = append(all, paths...)
		if len(paths) > 0 {
			kinds++
		}
	}
	if kinds == 0 {
		return nil
	}
	base := commonDir(all)
	var items []item
	if base != "" {
		items = append(items, item{text: basePrefix + base + ":"})
	}
	per := max(budget/kinds-20, 200)
	for kind, paths := range lists {
		if len(paths) == 0 {
			continue
		}
		names := make([]string, len(paths))
		for i, p := range paths {
			names[i] = strings.TrimPrefix(p, base)
			if kind == opModified && edits[p] > 1 {
				names[i] = fmt.Sprintf("%s (%d×)", names[i], edits[p])
			}
		}
		prio := 0
		if kind == opRead {
			prio = 1
		}
		items = append(items, item{text: opNames[kind] + ": " + joinBounded(names, per), prio: prio})
	}
	return number(items)
}

// commonDir returns the directory (ending in "/") whose factoring out saves
// the most characters (its length × the paths under it), when at least two
// paths are under it and it is long enough to be worth it; else "". Paths
// outside it are listed whole.
func commonDir(paths []string) string {
	if len(paths) < 2 {
		return ""
	}
	count := map[string]int{}
	for _, p := range paths {
		for i := 0; i < len(p); i++ {
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

// joinBounded joins names with ", " in at most max characters, keeping the
// most recent (last) ones and saying how many earlier ones were left out.
func joinBounded(names []string, max int) string {
	total := 0
	start := len(names)
	for start > 0 {
		n := utf8.RuneCountInString(names[start-1]) + 2
		if total+n > max && start < len(names) {
			break
		}
		total += n
		start--
	}
	s := strings.Join(names[start:], ", ")
	if start > 0 {
		s = fmt.Sprintf("+%d earlier, %s", start, s)
	}
	return s
}

func (x *extraction) toolItems() []item {
	if len(x.calls) == 0 && len(x.prev[secTools]) == 0 {
		return nil
	}
	var items []item
	for _, l := range x.prev[secTools] {
		items = append(items, item{text: l, prio: 2})
	}
	if len(x.calls) > 0 {
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
		items = append(items, item{text: fmt.Sprintf("%s: %s", plural(len(x.calls), "call"), strings.Join(parts, ", ")), prio: 0})
	}
	for _, c := range x.calls {
		items = append(items, item{text: describeCall(c), prio: 1})
	}
	return number(items)
}

func describeCall(c *call) string {
	s := c.name
	if c.key != "" {
		s += " `" + c.key + "`"
	}
	switch {
	case !c.answered:
		s += " → no result"
	case c.failed:
		s += " → failed"
	default:
		s += " → ok"
	}
	// A successful file operation says all there is to say; its result
	// (file content, "updated successfully") adds nothing.
	if c.answered && c.result != "" && (c.failed || !c.fileOp) {
		s += ": " + clip(c.result, 120)
	}
	return s
}

func (x *extraction) stateItems() []item {
	var items []item
	if x.lastReq != "" {
		items = append(items, item{text: "Latest request: " + clip(x.lastReq, 500)})
	}
	if x.todos != "" {
		items = append(items, item{text: "Todo list: " + clip(x.todos, 900)})
	}
	if x.lastText != "" {
		items = append(items, item{text: "Last assistant message: " + clip(x.lastText, 700)})
	}
	if n := len(x.openErrors()); n > 0 {
		items = append(items, item{text: fmt.Sprintf("%d error(s) not resolved in these messages (see Errors and fixes).", n), prio: 1})
	}
	if len(items) == 0 {
		for _, l := range x.prev[secState] {
			items = append(items, item{text: l})
		}
	}
	return number(items)
}

type fixNote struct {
	text  string
	fixed bool
}

// fix returns what followed a failed call: the same call succeeding later,
// or the assistant's next words; ok reports whether it was fixed.
func (x *extraction) fix(i int) (string, bool) {
	if f, ok := x.fixes[i]; ok {
		return f.text, f.fixed
	}
	if x.fixes == nil {
		x.fixes = map[int]fixNote{}
	}
	text, fixed := x.findFix(i)
	x.fixes[i] = fixNote{text, fixed}
	return text, fixed
}

func (x *extraction) findFix(i int) (string, bool) {
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
				if !slices.Contains(changed, p) {
					if len(changed) == 3 {
						more = true
						break
					}
					changed = append(changed, p)
				}
			}
			if more {
				break
			}
		}
		if len(changed) > 0 {
			s += " after changes to " + strings.Join(changed, ", ")
			if more {
				s += ", …"
			}
		}
		return s, true
	}
	// The assistant's words right after the result.
	if c.resultMsg >= 0 {
		for at := c.resultMsg + 1; at <= c.resultMsg+2; at++ {
			if t, ok := x.texts[at]; ok {
				return "next: " + firstSentence(t), false
			}
		}
	}
	return "not resolved in these messages", false
}

func (x *extraction) openErrors() []int {
	var open []int
	for i, c := range x.calls {
		if c.failed {
			if _, ok := x.fix(i); !ok {
				open = append(open, i)
			}
		}
	}
	return open
}

func (x *extraction) errorItems() []item {
	var items []item
	for _, l := range x.prev[secErrors] {
		items = append(items, item{text: l, prio: 1})
	}
	for i, c := range x.calls {
		if !c.failed {
			continue
		}
		s := c.name
		if c.key != "" {
			s += " `" + clip(c.key, 100) + "`"
		}
		s += " failed"
		if c.result != "" {
			s += ": " + clip(c.result, 160)
		}
		f, _ := x.fix(i)
		items = append(items, item{text: s + " → " + f, prio: 0})
	}
	return number(items)
}

// plural returns "1 call", "2 calls".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

// number sets each item's order to its position.
func number(items []item) []item {
	for i := range items {
		items[i].order = i
	}
	return items
}

// selectItems keeps the items that fit in budget characters and returns
// their texts in order. Lower priorities are kept first; within one
// priority the first item is kept first and then the newest. A final line
// says how many items were left out.
func selectItems(items []item, budget int) []string {
	if len(items) == 0 {
		return nil
	}
	budget = max(budget, 200)
	rank := slices.Clone(items)
	firstOf := map[int]int{}
	for _, it := range items {
		if _, ok := firstOf[it.prio]; !ok {
			firstOf[it.prio] = it.order
		}
	}
	slices.SortStableFunc(rank, func(a, b item) int {
		if a.prio != b.prio {
			return a.prio - b.prio
		}
		af, bf := firstOf[a.prio] == a.order, firstOf[b.prio] == b.order
		switch {
		case af && !bf:
			return -1
		case bf && !af:
			return 1
		}
		return b.order - a.order
	})
	keep := make([]bool, len(items))
	used, kept := 0, 0
	const note = 40 // room for the "left out" line
	for _, it := range rank {
		n := utf8.RuneCountInString(it.text) + 3
		if used+n > budget-note {
			if kept == 0 {
				items[it.order].text = clip(it.text, budget-note-3)
				keep[it.order] = true
				kept++
				used = budget
			}
			continue
		}
		keep[it.order] = true
		used += n
		kept++
	}
	var out []string
	for i, it := range items {
		if keep[i] {
			out = append(out, it.text)
		}
	}
	if dropped := len(items) - kept; dropped > 0 {
		out = append(out, fmt.Sprintf("(%d more not shown)", dropped))
	}
	return out
}
