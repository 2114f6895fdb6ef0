package prune

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/standin"
	"github.com/agentctx/agentctx/tokens"
)

// Defaults of [Options] (seed 004).
const (
	// DefaultPlaceholder replaces the content of a pruned result: "this
	// command's output is out of date".
	DefaultPlaceholder = standin.Seed
	// EnglishPlaceholder is DefaultPlaceholder in English, the
	// placeholder of agentctx's live commands (proxy, claude, codex),
	// whose models and users mostly read English.
	EnglishPlaceholder = standin.English
	// DefaultMaxAge is the age a result must exceed to be pruned.
	DefaultMaxAge = 15 * time.Minute
	// DefaultKeepRecent is the number of most recent results that are
	// always kept.
	DefaultKeepRecent = 5
)

// IsPlaceholder reports whether a tool result's text is the placeholder
// of a cleared result in either built-in text (DefaultPlaceholder or
// EnglishPlaceholder), alone or followed by the line that names the stored
// original. A placeholder set by Options.Placeholder is the caller's to
// recognise.
func IsPlaceholder(text string) bool { return standin.IsPlaceholder(text) }

// DefaultToolNames returns the tool names whose results are terminal output
// by default, whatever their content (names match in any case): the shell
// tools of the agents people run. "terminal-execute" (seed 004), "Bash"
// (Claude Code, which marks failed commands with is_error; also SWE-agent's
// and opencode's "bash"), "shell", "exec_command" and "local_shell"
// (Codex), "execute_bash" (OpenHands), "run_shell_command" (Gemini CLI)
// and "execute_command" and "run_commands" (Cline). Each call returns a new
// slice.
func DefaultToolNames() []string {
	return []string{"terminal-execute", "Bash", "shell", "exec_command", "local_shell", "execute_bash", "run_shell_command",
		"execute_command", "run_commands"}
}

// Options configure [Prune]. The zero value gives the seed's behaviour: the
// placeholder "此命令返回内容已过时", results older than 15 minutes pruned,
// the 5 most recent non-error results kept, the default tool names, the
// system clock, o200k_base token counts, no logging.
type Options struct {
	// Now returns the current time. nil means time.Now.
	Now func() time.Time

	// MaxAge is the age a result must strictly exceed to be pruned
	// (now − timestamp > MaxAge). 0 means DefaultMaxAge (15 minutes); a
	// negative value means no age limit.
	MaxAge time.Duration

	// KeepRecent is the number of most recent tool results that are always
	// kept. 0 means DefaultKeepRecent (5); a negative value keeps none.
	KeepRecent int

	// CountErrors makes error results take slots in the KeepRecent window.
	// By default (false) only results that are not errors are counted: the
	// reading under which seed 004's example 5 prunes items 7 and 8 (SPEC
	// §4). Errors are never pruned either way.
	CountErrors bool

	// Placeholder replaces the content of a pruned result. "" means
	// DefaultPlaceholder.
	Placeholder string

	// PlaceholderFunc, if set, returns the placeholder for one result, for
	// example one that names the command and where its output is kept. It
	// is called once per pruned result, oldest first; returning "" uses
	// Placeholder. It must not modify what it is given.
	PlaceholderFunc func(Stale) string

	// ToolNames lists the tools whose results are terminal output whatever
	// their content (results of other tools are terminal output when their
	// content has "stdout":, "stderr": or "exitCode":, reports an exit
	// status as an agent harness writes it, or, under ByShape, is shaped
	// like a shell transcript: see [Classify]). Names match without regard
	// to case ("bash" is "Bash").
	// nil means DefaultToolNames(); an empty non-nil slice means none, so
	// that only the content decides.
	ToolNames []string

	// ByShape also counts as terminal output a result shaped like the
	// transcript of a shell command, whatever its tool ([Class]'s
	// Transcript: an exit status line with a "Command:" or "Output:"
	// header or a stdout/stderr marker, as Gemini CLI and Qwen Code
	// write; Cline's "Command executed." then "Output:"), and as an error
	// one whose transcript reports a failed command: how the tools of an
	// agent that ToolNames does not name are learned. Off (the seed's
	// rule, SPEC §4) the shape counts for nothing. The live commands
	// (agentctx proxy, claude, codex) turn it on.
	ByShape bool

	// FirstSeen, if set, gives the time of a result whose message has no
	// readable timestamp (as SDK messages have none): the time an agent
	// first saw it, kept in its session state. ok false leaves the result
	// out, as without FirstSeen.
	FirstSeen func(r agentctx.ToolResult) (t time.Time, ok bool)

	// Classify, when set, returns Classify(r.Content) for each result:
	// a caller that prunes a growing history on every request keeps the
	// answers of the results it saw before (their text is read once).
	// nil classifies every result.
	Classify func(r agentctx.ToolResult) Class

	// Counter counts the tokens reported as freed. nil means
	// tokens.O200kBase().
	Counter tokens.Counter

	// Logger receives one Info line when anything was pruned, and a Debug
	// line per pruned result. nil means no logging.
	Logger *slog.Logger
}

// Stale describes a result that is about to be pruned. It is what
// [Options.PlaceholderFunc] receives.
type Stale struct {
	// Result is the tool result: where it is (Result.Message, Result.Block),
	// the id of the call it answers (Result.ID) and its original content.
	Result agentctx.ToolResult
	// ToolName is the name of the tool that was called, "" when the call
	// is not in the history.
	ToolName string
	// Input is the call's arguments as JSON (see [agentctx.ToolUse]), nil
	// when the call is not in the history.
	Input json.RawMessage
	// Time is the result's timestamp, and Age how old it is at the time of
	// the call to Prune.
	Time time.Time
	Age  time.Duration
}

// Command returns the command line of the call, read from its input: the
// "command" or "cmd" member, a string or an array of strings (joined with
// spaces). It returns "" when the input has neither.
func (s Stale) Command() string {
	if rawjson.Kind(s.Input) != '{' {
		return ""
	}
	members, err := rawjson.Members(s.Input)
	if err != nil {
		return ""
	}
	for _, key := range [...]string{"command", "cmd"} {
		if cmd, ok := commandMember(members, key); ok {
			return cmd
		}
	}
	return ""
}

// commandMember reads the last member named key as a command line: a string,
// or an array of strings joined with spaces.
func commandMember(members []rawjson.Member, key string) (string, bool) {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].Key != key {
			continue
		}
		switch v := members[i].Value; rawjson.Kind(v) {
		case '"':
			return rawjson.Unquote(v), true
		case '[':
			elems, err := rawjson.Elements(v)
			if err != nil {
				return "", false
			}
			parts := make([]string, 0, len(elems))
			for _, el := range elems {
				if rawjson.Kind(el) == '"' {
					parts = append(parts, rawjson.Unquote(el))
				}
			}
			return strings.Join(parts, " "), true
		}
		return "", false
	}
	return "", false
}

// Pruned reports one pruned result.
type Pruned struct {
	MessageIndex int       `json:"message_index"` // index of the message in the list
	BlockIndex   int       `json:"block_index"`   // index of the tool_result block; -1 for a role "tool" message
	ID           string    `json:"id"`            // the id of the call the result answers
	ToolName     string    `json:"tool_name"`     // the tool called; "" when the call is not in the history
	Timestamp    time.Time `json:"timestamp"`     // the result's timestamp

	// Chars and Tokens measure the original content: characters as SPEC §1
	// defines them, tokens of its text.
	Chars  int `json:"chars"`
	Tokens int `json:"tokens"`
	// FreedChars and FreedTokens are what replacing it saved: the original
	// minus the placeholder (negative for a result shorter than its
	// placeholder).
	FreedChars  int `json:"freed_chars"`
	FreedTokens int `json:"freed_tokens"`
}

// Result is what [Prune] returns.
type Result struct {
	// Messages is the view to send: a new list, in which pruned results
	// hold the placeholder. Changed messages are deep copies; the others
	// are shared with the input.
	Messages []agentctx.Message `json:"messages"`
	// Pruned lists the pruned results in history order (never nil).
	Pruned []Pruned `json:"pruned"`
	// PrunedCount is len(Pruned).
	PrunedCount int `json:"pruned_count"`
	// FreedChars and FreedTokens are the sums over Pruned.
	FreedChars  int `json:"freed_chars"`
	FreedTokens int `json:"freed_tokens"`
	// SkippedNoTimestamp counts the tool results that were kept because
	// their message has no readable timestamp.
	SkippedNoTimestamp int `json:"skipped_no_timestamp"`
	// ByContent lists, sorted and each once, the names of the called tools
	// outside ToolNames with a result that counted as terminal output by
	// its content alone (its "stdout": or exit status marks, or under
	// ByShape a shell transcript of a tool the list does not name),
	// whether or not it was pruned: what a caller may tell its user it
	// learned. Nil when none.
	ByContent []string `json:"by_content,omitempty"`
}

// candidate is a tool result with a timestamp, as the ranking sees it.
// It names the result and its call by position: a history of 50,000
// results made 136 bytes of each (with the list of every call beside
// them, 80 bytes a call) on every request (issue 24, item 7).
type candidate struct {
	res      resultRef
	call     callRef // of the call it answers; msg is -1 when none
	ts       time.Time
	isError  bool
	terminal bool
	prune    bool
}

// resultRef is where a tool result is in msgs (agentctx.ToolResult's
// Message, Block and Turn).
type resultRef struct{ msg, block, turn int32 }

func refOf(r agentctx.ToolResult) resultRef {
	return resultRef{int32(r.Message), int32(r.Block), int32(r.Turn)}
}

// result returns the tool result at ref, as agentctx.ToolResults yields it.
func (ref resultRef) result(msgs []agentctx.Message) agentctx.ToolResult {
	m := &msgs[ref.msg]
	r := agentctx.ToolResult{Message: int(ref.msg), Block: int(ref.block), Turn: int(ref.turn)}
	if ref.block < 0 {
		r.ID, r.Content = m.ToolCallID, m.Content
		return r
	}
	b := &m.Content.Blocks()[ref.block]
	r.ID, r.Content, r.IsError = b.ToolUseID, b.Content, b.IsError
	return r
}

// callRef is where a tool call is in msgs (agentctx.ToolUse's Message,
// Index and OpenAI).
type callRef struct {
	msg, index int32
	openAI     bool
}

// call returns the name and input of the call at ref, as agentctx.ToolUses
// yields them.
func (ref callRef) call(msgs []agentctx.Message) (name string, input json.RawMessage) {
	m := &msgs[ref.msg]
	if ref.openAI {
		f := &m.ToolCalls[ref.index].Function
		return f.Name, json.RawMessage(f.Arguments)
	}
	b := &m.Content.Blocks()[ref.index]
	return b.Name, b.Input
}

// name returns the name of the call at ref.
func (ref callRef) name(msgs []agentctx.Message) string {
	m := &msgs[ref.msg]
	if ref.openAI {
		return m.ToolCalls[ref.index].Function.Name
	}
	return m.Content.Blocks()[ref.index].Name
}

// lastCall returns the last call with id in msgs[i] (agentctx.ToolUses'
// order: blocks, then OpenAI tool calls), and whether it has one: in the
// message a result's Turn names, the call the result answers.
func lastCall(msgs []agentctx.Message, i int, id string) (callRef, bool) {
	m := &msgs[i]
	for j := len(m.ToolCalls) - 1; j >= 0; j-- {
		if m.ToolCalls[j].ID == id {
			return callRef{int32(i), int32(j), true}, true
		}
	}
	bl := m.Content.Blocks()
	for j := len(bl) - 1; j >= 0; j-- {
		if bl[j].Type == agentctx.BlockToolUse && bl[j].ID == id {
			return callRef{int32(i), int32(j), false}, true
		}
	}
	return callRef{}, false
}

// Prune returns the view of msgs to send to the model, with stale successful
// terminal output replaced by a placeholder, and a report of what was
// replaced. See the package documentation for the rules.
//
// msgs is never modified. Prune is pure apart from reading opts.Now and
// logging: the same history, options and time give the same result.
func Prune(msgs []agentctx.Message, opts Options) Result {
	return prune(msgs, opts, true)
}

// Select is Prune without the view: it reports the results Prune would
// replace (Pruned and the sums, as Prune reports them) and leaves
// Result.Messages nil, so that a caller that applies the decisions itself
// does not pay for a copy of a long history (issue 24).
func Select(msgs []agentctx.Message, opts Options) Result {
	return prune(msgs, opts, false)
}

// prune is Prune, making the view only when view is set.
func prune(msgs []agentctx.Message, opts Options, view bool) Result {
	o := opts.resolve()
	now := o.now()

	res := Result{Pruned: []Pruned{}}
	if view {
		res.Messages = slices.Clone(msgs)
		if res.Messages == nil {
			res.Messages = []agentctx.Message{}
		}
	}

	cands, skipped, byContent := o.collect(msgs)
	res.SkippedNoTimestamp, res.ByContent = skipped, byContent

	o.mark(cands, now)

	// Replace, oldest first. Each changed message is cloned once.
	cloned := -1
	for i := range cands {
		c := &cands[i]
		if !c.prune {
			continue
		}
		r := c.res.result(msgs)
		st := Stale{Result: r, Time: c.ts, Age: now.Sub(c.ts)}
		if c.call.msg >= 0 {
			st.ToolName, st.Input = c.call.call(msgs)
		}
		ph := o.placeholder(st)

		mi := r.Message
		if view {
			if cloned != mi {
				res.Messages[mi] = msgs[mi].Clone()
				cloned = mi
			}
			if r.IsMessage() {
				res.Messages[mi] = res.Messages[mi].WithContent(agentctx.Text(ph))
			} else {
				b := res.Messages[mi].Content.Blocks()[r.Block]
				b.Content = agentctx.Text(ph)
				res.Messages[mi] = res.Messages[mi].WithBlock(r.Block, b)
			}
		}

		chars, toks := r.Content.Chars(), countContent(o.Counter, r.Content)
		p := Pruned{
			MessageIndex: mi,
			BlockIndex:   r.Block,
			ID:           r.ID,
			ToolName:     st.ToolName,
			Timestamp:    c.ts,
			Chars:        chars,
			Tokens:       toks,
			FreedChars:   chars - utf8.RuneCountInString(ph),
			FreedTokens:  toks - o.Counter.Count(ph),
		}
		res.Pruned = append(res.Pruned, p)
		res.FreedChars += p.FreedChars
		res.FreedTokens += p.FreedTokens
		o.Logger.Debug("prune: replaced stale terminal output",
			"message_index", p.MessageIndex, "block_index", p.BlockIndex, "id", p.ID,
			"tool_name", p.ToolName, "age", st.Age, "freed_chars", p.FreedChars)
	}
	res.PrunedCount = len(res.Pruned)
	if res.PrunedCount > 0 {
		o.Logger.Info("prune: replaced stale terminal output in the API view",
			"pruned_count", res.PrunedCount, "freed_chars", res.FreedChars,
			"freed_tokens", res.FreedTokens, "skipped_no_timestamp", res.SkippedNoTimestamp)
	}
	return res
}

// mark sets prune on the candidates to replace at now: stale terminal
// output outside the KeepRecent most recent results. They rank newest
// first; results at the same instant rank by position, later first (cands
// is in history order, so the index is the position).
func (o *resolved) mark(cands []candidate, now time.Time) {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cands[b].ts.Compare(cands[a].ts); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	slots := 0
	for _, k := range order {
		c := &cands[k]
		if c.isError {
			if o.CountErrors {
				slots++
			}
			continue // errors are always kept
		}
		if slots < o.KeepRecent {
			slots++
			continue // among the most recent
		}
		if c.terminal && (o.MaxAge < 0 || now.Sub(c.ts) > o.MaxAge) {
			c.prune = true
		}
	}
}

// placeholder returns the text that replaces st: PlaceholderFunc's, unless
// it gives none, else Placeholder.
func (o *resolved) placeholder(st Stale) string {
	if o.PlaceholderFunc != nil {
		if s := o.PlaceholderFunc(st); s != "" {
			return s
		}
	}
	return o.Placeholder
}

// resolved is Options with the defaults filled in.
type resolved struct {
	Options
	now   func() time.Time
	tools map[string]bool
}

func (opts Options) resolve() resolved {
	o := resolved{Options: opts, now: opts.Now}
	if o.now == nil {
		o.now = time.Now
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	switch {
	case o.KeepRecent == 0:
		o.KeepRecent = DefaultKeepRecent
	case o.KeepRecent < 0:
		o.KeepRecent = 0
	}
	if o.Placeholder == "" {
		o.Placeholder = DefaultPlaceholder
	}
	names := opts.ToolNames
	if names == nil {
		names = DefaultToolNames()
	}
	o.tools = make(map[string]bool, len(names))
	for _, n := range names {
		o.tools[strings.ToLower(n)] = true
	}
	if o.Counter == nil {
		o.Counter = tokens.O200kBase()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// collect returns the tool results that have a timestamp, classified, in
// history order, and the number of results without a readable timestamp
// (one in years 0–9999), and the names of the tools outside o.tools whose
// results are terminal output by their content (Result.ByContent). Each
// result is matched with the latest call with its id in a message before
// it (the message its Turn names).
func (o *resolved) collect(msgs []agentctx.Message) (cands []candidate, skipped int, byContent []string) {
	n := 0
	for i := range msgs {
		if msgs[i].Role == agentctx.RoleTool {
			n++
			continue
		}
		bl := msgs[i].Content.Blocks()
		for j := range bl {
			if bl[j].Type == agentctx.BlockToolResult {
				n++
			}
		}
	}
	cands = make([]candidate, 0, n) // sized: a long history's results are not copied as the list grows

	lastMsg := -1
	var ts time.Time
	var hasTS, msgError bool
	terminalTool := make(map[string]bool, len(o.tools)) // tool name as called → in o.tools (lowered once per name)
	for r := range agentctx.ToolResults(msgs) {
		if r.Message != lastMsg {
			lastMsg = r.Message
			m := &msgs[r.Message]
			ts, hasTS = m.Timestamp()
			// RFC 3339 (and the report's JSON) can only write years 0–9999.
			hasTS = hasTS && ts.Year() >= 0 && ts.Year() <= 9999
			msgError = m.Status() == "error"
		}
		rts, ok := ts, hasTS
		if !ok && o.FirstSeen != nil {
			rts, ok = o.FirstSeen(r)
		}
		if !ok {
			skipped++
			continue
		}
		call := callRef{msg: -1}
		if r.Turn >= 0 && r.ID != "" {
			if c, ok := lastCall(msgs, r.Turn, r.ID); ok {
				call = c
			}
		}
		c := candidate{res: refOf(r), call: call, ts: rts}
		var cl Class
		if o.Classify != nil {
			cl = o.Classify(r)
		} else {
			cl = Classify(r.Content)
		}
		if call.msg >= 0 {
			name := call.name(msgs)
			t, ok := terminalTool[name]
			if !ok {
				t = o.tools[strings.ToLower(name)]
				terminalTool[name] = t
			}
			c.terminal = t
		}
		byText := cl.terminal(o.ByShape)
		if !c.terminal && byText && call.msg >= 0 {
			if name := call.name(msgs); name != "" && !slices.Contains(byContent, name) {
				byContent = append(byContent, name)
			}
		}
		c.terminal = c.terminal || byText
		// A transcript's failed status marks an error wherever the result
		// is terminal output, by name too (Gemini CLI's "Exit Code: 1"):
		// the seed keeps a failed command's output. Elsewhere it says
		// nothing, so that a file that reads like one is ranked as any.
		c.isError = msgError || r.IsError || cl.Error || c.terminal && cl.TranscriptFailed
		cands = append(cands, c)
	}
	slices.Sort(byContent)
	return cands, skipped, byContent
}

// countContent counts the tokens of a result's content: the text of a
// string, and of the text (and nested tool_result) blocks of a list; other
// blocks (images, documents) count nothing here. Any other JSON value is
// counted as its JSON.
func countContent(tc tokens.Counter, c agentctx.Content) int {
	switch c.Kind() {
	case agentctx.ContentText:
		return tc.Count(c.Text())
	case agentctx.ContentBlocks:
		n := 0
		for _, b := range c.Blocks() {
			switch b.Type {
			case agentctx.BlockText:
				n += tc.Count(b.Text)
			case agentctx.BlockToolResult:
				n += countContent(tc, b.Content)
			}
		}
		return n
	case agentctx.ContentOther:
		return tc.Count(c.AsText())
	}
	return 0
}
