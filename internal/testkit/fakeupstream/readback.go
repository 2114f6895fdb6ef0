package fakeupstream

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// ReadBack is a scripted model that proves an agent can read an offloaded
// tool result back (issue 21). Its Script, for Options.Script:
//
//  1. asks the client to run the tool that produces a large result
//     (ReadBackOptions.Produce), which holds a secret token that the model
//     must later report;
//  2. runs filler steps (Filler): Fillers of them, and with FromSummary
//     more, until the request it receives holds a compaction summary;
//  3. reads the result back using only what the request it receives says:
//     the pointers it finds in the request's text (with FromSummary, in the
//     summary message only): by path (<file>PATH</file>, or an absolute
//     path under one of PathRoots) with ReadPath, or by artifact id
//     (<knowledge id="...">, artifact_id="..." or tool_result_...) with
//     ReadID, paging on while a page's notice says "Continue with
//     get_knowledge_by_id(artifact_id=..., offset=N)". A read result that is
//     again a reference is followed like the first one, up to MaxReads
//     reads in all;
//  4. answers "TOKEN=<value>" when a tool result of the request carries the
//     token (TokenPattern's first group), else "TOKEN=not found".
//
// The model never knows the token's value, nor the artifact's id or path,
// beforehand: it acts only on the requests. Summary requests (those with
// SummaryHeader) get a summary that names no pointer, so that a pointer in
// a compacted history is there because the product put it there.
//
// Report describes, step by step, what the model saw and did, for failure
// messages; Early, Reads, Answer and Leaked are for assertions.
type ReadBack struct {
	opts ReadBackOptions

	mu       sync.Mutex
	phase    int // 0: produce, 1: fill, 2: read, 3: answered
	fillers  int
	tried    map[string]bool
	reads    []ReadAttempt
	answer   string
	leaked   string
	early    string
	log      []string
	requests int
}

// ReadMode is how the ReadBack model reads a result back.
type ReadMode int

// Read modes.
const (
	// ByPath reads the artifact's content file whole (ReadPath).
	ByPath ReadMode = iota
	// ByID reads the artifact by id, page by page (ReadID).
	ByID
)

func (m ReadMode) String() string {
	if m == ByID {
		return "by id"
	}
	return "by path"
}

// DefaultTokenPattern matches the token line the read-back tests plant;
// its group is the value.
var DefaultTokenPattern = regexp.MustCompile(`SECRET_TOKEN=(tok_[0-9a-z]+)`)

// DefaultSummaryHeader marks the summary requests of agentctx's proxy
// (proxy.HeaderSummary).
const DefaultSummaryHeader = "X-Agentctx-Summary"

// ReadBackOptions configure a ReadBack model.
type ReadBackOptions struct {
	// Mode is how to read back: ByPath (the default) or ByID.
	Mode ReadMode
	// FromSummary takes the pointers only from the summary message (the
	// message whose text holds SummaryTitle), and keeps running fillers
	// until a request holds one (up to MaxFillers).
	FromSummary bool
	// SummaryTitle starts a compaction summary; it also starts the summary
	// the model writes when asked for one.
	SummaryTitle string
	// SummaryHeader marks a summary request; "" means DefaultSummaryHeader.
	SummaryHeader string
	// TokenPattern finds the token; its first group is the value. nil
	// means DefaultTokenPattern.
	TokenPattern *regexp.Regexp
	// Produce returns the call that produces the large result. It reports
	// false for a request that does not offer the tool: such a request is
	// not the agent's loop (a title, a check) and is answered "ok", at any
	// step.
	Produce func(c *Call) (ToolCall, bool)
	// Filler returns the i-th filler call (from 1).
	Filler func(c *Call, i int) (ToolCall, bool)
	// Fillers is the number of filler steps before reading.
	Fillers int
	// MaxFillers bounds the fillers with FromSummary; 0 means 12.
	MaxFillers int
	// ReadPath returns the call that reads the file at path whole.
	ReadPath func(c *Call, path string) (ToolCall, bool)
	// ReadID returns the call that reads artifact id from offset.
	ReadID func(c *Call, id string, offset int) (ToolCall, bool)
	// PathRoots are directories: an absolute path under one of them in
	// the text is a pointer too (besides <file>PATH</file>).
	PathRoots []string
	// MaxReads bounds the read calls; 0 means 3.
	MaxReads int
}

// ReadAttempt is one read call of the model and what came back.
type ReadAttempt struct {
	Call ToolCall
	// Result is the tool result the next request carried ("" until then).
	Result string
	// Reference reports a result that was a <knowledge_list> reference
	// rather than content.
	Reference bool
	// Token reports a result that carried the token.
	Token bool
}

// NewReadBack returns a ReadBack model.
func NewReadBack(opts ReadBackOptions) *ReadBack {
	if opts.SummaryHeader == "" {
		opts.SummaryHeader = DefaultSummaryHeader
	}
	if opts.TokenPattern == nil {
		opts.TokenPattern = DefaultTokenPattern
	}
	if opts.MaxFillers <= 0 {
		opts.MaxFillers = 12
	}
	if opts.MaxReads <= 0 {
		opts.MaxReads = 3
	}
	return &ReadBack{opts: opts, tried: map[string]bool{}}
}

// Reads returns the read calls made so far and their results.
func (m *ReadBack) Reads() []ReadAttempt {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ReadAttempt(nil), m.reads...)
}

// Answer returns the final answer ("" before it).
func (m *ReadBack) Answer() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answer
}

// Leaked returns a description of the first request that carried the
// token before any read call ("" if none): the result was not offloaded,
// and the read-back proves nothing.
func (m *ReadBack) Leaked() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leaked
}

// Early returns the large result as the model first received it ("" if
// no request carried it): a <knowledge_list> reference when the result
// was offloaded.
func (m *ReadBack) Early() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.early
}

// Report describes what the model saw and did, one line per event.
func (m *ReadBack) Report() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.log, "\n")
}

func (m *ReadBack) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("request %d: ", m.requests)+fmt.Sprintf(format, args...))
}

var (
	fileTag      = regexp.MustCompile(`<file>([^<]+)</file>`)
	knowledgeID  = regexp.MustCompile(`<knowledge id="([^"]+)"`)
	artifactArg  = regexp.MustCompile(`artifact_id="([^"]+)"`)
	toolResultID = regexp.MustCompile(`\btool_result_[A-Za-z0-9_\-]+`)
	continueRead = regexp.MustCompile(`get_knowledge_by_id\(artifact_id="([^"]+)", offset=([0-9]+)\)`)
	absPath      = regexp.MustCompile(`/[^\s"'<>()\[\]{}` + "`" + `,;]+`)
)

// pointer is a place to read from.
type pointer struct {
	path   string
	id     string
	offset int
}

func (p pointer) key() string {
	if p.path != "" {
		return "path:" + p.path
	}
	return fmt.Sprintf("id:%s@%d", p.id, p.offset)
}

// pointers returns the pointers in text the model's mode can follow, in
// order of appearance.
func (m *ReadBack) pointers(text string) []pointer {
	if m.opts.Mode == ByPath {
		return pathPointers(text, m.opts.PathRoots)
	}
	return idPointers(text)
}

// pathPointers returns the paths text points at, in order of appearance:
// <file>PATH</file>, and absolute paths under one of roots.
func pathPointers(text string, roots []string) []pointer {
	var out []pointer
	for _, g := range fileTag.FindAllStringSubmatch(text, -1) {
		out = append(out, pointer{path: strings.TrimSpace(g[1])})
	}
	for _, p := range absPath.FindAllString(text, -1) {
		p = strings.TrimRight(p, ".:")
		for _, root := range roots {
			if root != "" && strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/") {
				out = append(out, pointer{path: p})
			}
		}
	}
	return out
}

// idPointers returns the artifact ids text points at, in order of kind
// then appearance: a page's "Continue with get_knowledge_by_id(...)"
// notice first, then <knowledge id="...">, artifact_id="..." and bare
// tool_result_... ids.
func idPointers(text string) []pointer {
	var out []pointer
	for _, g := range continueRead.FindAllStringSubmatch(text, -1) {
		var off int
		fmt.Sscan(g[2], &off)
		out = append(out, pointer{id: g[1], offset: off})
	}
	for _, re := range []*regexp.Regexp{knowledgeID, artifactArg} {
		for _, g := range re.FindAllStringSubmatch(text, -1) {
			out = append(out, pointer{id: g[1]})
		}
	}
	for _, id := range toolResultID.FindAllString(text, -1) {
		out = append(out, pointer{id: id})
	}
	return out
}

// summaryText returns the text of the request's summary message, or "".
func (m *ReadBack) summaryText(c *Call) string {
	if m.opts.SummaryTitle == "" {
		return ""
	}
	items := asSlice(c.Body["messages"])
	if c.API == APIResponses {
		items = asSlice(c.Body["input"])
	}
	for _, iv := range items {
		if t := textOf(asMap(iv)["content"]); strings.Contains(t, m.opts.SummaryTitle) {
			return t
		}
	}
	return ""
}

// Script answers the requests; use it as Options.Script.
func (m *ReadBack) Script(c *Call) Reply {
	if c.Header.Get(m.opts.SummaryHeader) != "" {
		return Reply{Text: m.opts.SummaryTitle + "\n\n## Goals and key decisions\n- find the secret token and report it\n" +
			"## Current state\n- a large output was produced earlier; filler steps ran since\n## Next steps\n- read the large output back and report the token"}
	}
	produce, ok := m.opts.Produce(c)
	if !ok {
		return Reply{Text: "ok"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	if m.phase < 2 && len(m.reads) == 0 && m.leaked == "" {
		if g := m.opts.TokenPattern.FindString(c.AllText); g != "" {
			m.leaked = fmt.Sprintf("request %d (before any read call) carried %q", m.requests, g)
			m.logf("the request already carries the token: the large result was not replaced")
		}
	}
	switch m.phase {
	case 0:
		m.phase = 1
		m.logf("produce: %s", describe(produce))
		return Reply{Text: "Producing the large output.", ToolCalls: []ToolCall{produce}}
	case 1:
		return m.fill(c)
	case 2:
		return m.readResult(c)
	}
	return Reply{Text: m.answer}
}

// fill answers in phase 1: the filler steps, then, once the fillers are
// done (and, reading from the summary, a summary came), the first read
// of a pointer the summary or the request names. m.mu is held.
func (m *ReadBack) fill(c *Call) Reply {
	if m.fillers == 0 && len(c.Results) > 0 {
		r := c.Results[len(c.Results)-1]
		m.early = r
		m.logf("the large result arrived as %s", summarize(r, m.opts.TokenPattern))
	}
	summary := m.summaryText(c)
	if m.fillers < m.opts.Fillers || m.opts.FromSummary && summary == "" && m.fillers < m.opts.MaxFillers {
		m.fillers++
		tc, ok := m.opts.Filler(c, m.fillers)
		if ok {
			return Reply{Text: fmt.Sprintf("Filler step %d.", m.fillers), ToolCalls: []ToolCall{tc}}
		}
	}
	m.phase = 2
	var scope string
	if m.opts.FromSummary {
		if summary == "" {
			m.logf("after %d fillers no request holds a summary (%q): no compaction", m.fillers, m.opts.SummaryTitle)
			return m.finish("")
		}
		m.logf("the summary (%d chars) reads:\n%s", len(summary), indent(summary))
		if m.opts.TokenPattern.MatchString(c.AllText) && !m.opts.TokenPattern.MatchString(summary) {
			m.logf("(the token is in the request outside the summary, which the model may not use)")
		}
		scope = summary
	} else {
		scope = c.AllText
	}
	ps := m.pointers(scope)
	if len(ps) == 0 {
		m.logf("no pointer %s in %s", m.opts.Mode, map[bool]string{true: "the summary", false: "the request"}[m.opts.FromSummary])
		return m.finish("")
	}
	return m.read(c, ps)
}

// readResult answers in phase 2: the result of the last read either holds
// the token (the answer) or names the next pointer to read. m.mu is held.
func (m *ReadBack) readResult(c *Call) Reply {
	last := ""
	if len(c.Results) > 0 {
		last = c.Results[len(c.Results)-1]
	}
	a := &m.reads[len(m.reads)-1]
	a.Result = last
	a.Reference = strings.Contains(last, "<knowledge_list>")
	g := m.opts.TokenPattern.FindStringSubmatch(last)
	a.Token = g != nil
	m.logf("read %d (%s) returned %s", len(m.reads), describe(a.Call), summarize(last, m.opts.TokenPattern))
	if g != nil {
		return m.finish(g[1])
	}
	ps := m.pointers(last)
	if len(ps) == 0 {
		m.logf("the result names nothing more to read")
		return m.finish("")
	}
	return m.read(c, ps)
}

// read makes the next read call: the first untried pointer of ps.
func (m *ReadBack) read(c *Call, ps []pointer) Reply {
	if len(m.reads) >= m.opts.MaxReads {
		m.logf("giving up after %d reads", len(m.reads))
		return m.finish("")
	}
	for _, p := range ps {
		if m.tried[p.key()] {
			continue
		}
		m.tried[p.key()] = true
		var (
			tc ToolCall
			ok bool
		)
		if p.path != "" {
			tc, ok = m.opts.ReadPath(c, p.path)
		} else {
			tc, ok = m.opts.ReadID(c, p.id, p.offset)
		}
		if !ok {
			m.logf("cannot read %s: the request lacks the tool", p.key())
			continue
		}
		m.reads = append(m.reads, ReadAttempt{Call: tc})
		return Reply{Text: "Reading it back.", ToolCalls: []ToolCall{tc}}
	}
	m.logf("the pointers it names were all tried already")
	return m.finish("")
}

func (m *ReadBack) finish(token string) Reply {
	m.phase = 3
	if token == "" {
		m.answer = "TOKEN=not found"
	} else {
		m.answer = "TOKEN=" + token
	}
	m.logf("answer %q after %d reads", m.answer, len(m.reads))
	return Reply{Text: m.answer}
}

func describe(tc ToolCall) string { return tc.Name + inputJSON(tc.Input) }

// summarize says what a tool result is, for the report.
func summarize(r string, token *regexp.Regexp) string {
	what := "content"
	switch {
	case strings.Contains(r, "<knowledge_list>"):
		what = "a <knowledge_list> reference"
		if g := knowledgeID.FindStringSubmatch(r); g != nil {
			what += " to " + g[1]
		}
		if g := fileTag.FindStringSubmatch(r); g != nil {
			what += " (file " + g[1] + ")"
		}
	case r == "":
		what = "nothing"
	}
	has := "without the token"
	if token.MatchString(r) {
		has = "with the token"
	}
	head := r
	if len(head) > 300 {
		head = head[:300] + "..."
	}
	return fmt.Sprintf("%d chars, %s, %s: %q", len(r), what, has, head)
}

func indent(s string) string {
	if len(s) > 3000 {
		s = s[:3000] + "..."
	}
	return "    | " + strings.ReplaceAll(s, "\n", "\n    | ")
}

// ReadBackPayload returns a text of at least size characters, in lines of
// about 60, with the line "SECRET_TOKEN=<token>" (DefaultTokenPattern)
// in the middle, far from the head and tail a reference previews.
func ReadBackPayload(token string, size int) string {
	const line = "line %05d of the build log: step ok, nothing to report here\n"
	n := size/len(fmt.Sprintf(line, 0)) + 1
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == n/2 {
			fmt.Fprintf(&b, "SECRET_TOKEN=%s\n", token)
		}
		fmt.Fprintf(&b, line, i)
	}
	return b.String()
}
