package compact

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens"
)

// A Model answers one prompt: a system prompt and a user prompt in, text
// out. The provider packages (compact/anthropicsum, compact/openaisum)
// implement it over the official SDKs; anything else that can complete a
// prompt will do.
//
// Complete must honour ctx, must make one attempt (Compact does the
// retrying), and should return an *APIError for a provider's failure. An
// empty answer may be returned as "" (ModelSummarizer turns it into
// ErrEmptySummary). It may be called from several goroutines at once.
type Model interface {
	Complete(ctx context.Context, system, prompt string) (string, error)
}

// ModelFunc adapts a function to the Model interface.
type ModelFunc func(ctx context.Context, system, prompt string) (string, error)

// Complete calls f(ctx, system, prompt).
func (f ModelFunc) Complete(ctx context.Context, system, prompt string) (string, error) {
	return f(ctx, system, prompt)
}

// Defaults of ModelSummarizer.
const (
	// DefaultInputTokens is the most tokens of conversation sent in one
	// model call; a larger middle is summarized in parts.
	DefaultInputTokens = 100_000
	// DefaultMaxResultChars is the longest tool result (and tool input, and
	// thinking text) passed to the model whole; longer ones keep their
	// beginning and end.
	DefaultMaxResultChars = 4_000
)

// SystemPrompt is the system prompt of every summary call.
const SystemPrompt = `You compact the history of a conversation between a user and an AI agent that uses tools. The agent will continue its work from your summary and the most recent messages alone, without the original messages, so keep every fact it needs: file paths, function, type, module, command, test and issue names exactly as written (verbatim, in backticks), numbers, error messages, and decisions with their reasons. Write plain structured Markdown. Do not call tools, do not continue the task, do not address the user. Leave out anything volatile (timestamps, temporary paths) and any placeholder text such as "(output not available here)".`

// SummaryPrompt introduces the conversation to summarize. The rendered
// conversation follows it inside <conversation> tags. It asks for the
// sections the extractive summarizer writes, so the two can be read (and
// rolled into a later summary) alike.
const SummaryPrompt = `Summarize the conversation below. Start with the line "` + SummaryTitle + `", then write these sections, each as a Markdown heading ("## ...") followed by short bullet points; write "- none" under a section with nothing to say:

## User requests
Every request the user made, verbatim, oldest first, newest last, as a numbered list. Tool results are not user requests.
## Goals and key decisions
The goals, and the decisions taken and findings made, with their reasons.
## File operations
Each file with what happened to it: read, created, modified (with the gist of the change), deleted. Keep the paths exactly as written.
## Key identifiers
The functions, types, modules, commands, test names and issue ids the work is about, most central first, verbatim.
## Tool calls
The tools called: name, key input, key result, and whether each succeeded or failed. Group repeated calls.
## Errors and fixes
Each error met, its cause, and how it was fixed (or that it is still open).
## Current state
The current task; the plan or todo list if the conversation kept one, with what is done and what is left; the last thing the assistant said; the next steps it announced.

If the conversation begins with an earlier summary, carry its content into the new one (its user requests stay verbatim, before the new ones); newer information overrides older. Do not repeat yourself.`

// MergePrompt introduces the partial summaries of a conversation too long
// for one call.
const MergePrompt = `The conversation was too long to summarize at once; below are the summaries of its consecutive parts, oldest first. Merge them into one summary of the whole conversation. Start with the line "` + SummaryTitle + `" and keep the same sections (User requests; Goals and key decisions; File operations; Key identifiers; Tool calls; Errors and fixes; Current state). Keep every user request verbatim, in order, and every path and identifier exactly as written; keep every concrete fact once; where parts disagree, the later part is right; the current state is the state at the end of the last part.`

// PointersPrompt follows the conversation (or the partial summaries) when
// the request has pointers (Request.Pointers); the pointer section follows
// it inside <stored_originals> tags. Whatever the model writes, the summary
// ends with that section (WithPointers): the model is asked to keep it so
// that it can also name the ids where they help.
const PointersPrompt = `The originals of these messages are stored whole; the section below says where. End your summary with this section exactly as written: the same heading and the same lines, every artifact id and path unchanged, none left out. You may also name these ids where they help (a result worth reading again).`

// ModelSummarizer is a Summarizer that asks a Model. It renders the messages
// as readable text (see Render), with very long tool results shortened, and
// when the text is larger than InputTokens it summarizes the conversation in
// parts and merges their summaries with further calls. An empty answer to
// any call is a failure (ErrEmptySummary).
//
// The zero value is not usable: Model is required. A ModelSummarizer is
// safe for concurrent use.
type ModelSummarizer struct {
	// Model answers the prompts. Required.
	Model Model
	// Counter measures the prompts against InputTokens. Nil means
	// tokens.O200kBase().
	Counter tokens.Counter
	// InputTokens is the most tokens of conversation per call. Zero means
	// DefaultInputTokens. Set it below the model's context window minus
	// its output.
	InputTokens int
	// MaxResultChars is the longest tool result, tool input or thinking
	// text passed whole. Zero means DefaultMaxResultChars.
	MaxResultChars int
	// Logger receives a debug line per call. Nil discards.
	Logger *slog.Logger
}

// minPartTokens keeps a tiny InputTokens from splitting a conversation into
// absurdly many calls.
const minPartTokens = 512

// maxMergeRounds bounds the merging of partial summaries.
const maxMergeRounds = 8

// Summarize implements Summarizer.
func (s *ModelSummarizer) Summarize(ctx context.Context, req Request) (string, error) {
	if s == nil || s.Model == nil {
		return "", fmt.Errorf("compact: ModelSummarizer has no Model")
	}
	tc := s.Counter
	if tc == nil {
		tc = tokens.O200kBase()
	}
	budget := s.InputTokens
	if budget <= 0 {
		budget = DefaultInputTokens
	}
	pointers := ""
	if section := RenderPointers(req.Pointers); section != "" {
		pointers = "\n\n" + PointersPrompt + "\n<stored_originals>\n" + section + "\n</stored_originals>"
	}
	budget = max(budget-tc.Count(SystemPrompt)-tc.Count(SummaryPrompt)-tc.Count(pointers)-64, minPartTokens)
	maxChars := s.MaxResultChars
	if maxChars <= 0 {
		maxChars = DefaultMaxResultChars
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	// Render message by message, then group consecutive messages into
	// parts that fit the budget.
	var parts []string
	var cur strings.Builder
	curTokens := 0
	for i, m := range req.Messages {
		text := renderMessage(i+1, m, maxChars)
		n := tc.Count(text)
		if n > budget {
			text, n = fitTokens(tc, text, budget)
		}
		if curTokens > 0 && curTokens+n > budget {
			parts = append(parts, cur.String())
			cur.Reset()
			curTokens = 0
		}
		cur.WriteString(text)
		curTokens += n
	}
	if cur.Len() > 0 || len(parts) == 0 {
		parts = append(parts, cur.String())
	}

	summaries := make([]string, len(parts))
	for i, p := range parts {
		prompt := SummaryPrompt
		tail := pointers
		if len(parts) > 1 {
			prompt += fmt.Sprintf("\n\nThis is part %d of %d of the conversation.", i+1, len(parts))
			tail = "" // the merge keeps them
		}
		out, err := s.call(ctx, log, prompt+"\n\n<conversation>\n"+p+"</conversation>"+tail, fmt.Sprintf("part %d/%d", i+1, len(parts)))
		if err != nil {
			return "", err
		}
		summaries[i] = out
	}
	for round := 1; len(summaries) > 1; round++ {
		if round > maxMergeRounds {
			summaries = []string{strings.Join(summaries, "\n\n")}
			break
		}
		merged, err := s.merge(ctx, log, tc, budget, summaries, round, pointers)
		if err != nil {
			return "", err
		}
		summaries = merged
	}
	return finish(summaries[0], req), nil
}

// merge merges groups of consecutive summaries that fit the budget with
// one call per group, and returns the merged summaries. Every summary is
// first held to a third of the budget, so each group holds at least two and
// every round makes progress; a last summary left alone passes through.
func (s *ModelSummarizer) merge(ctx context.Context, log *slog.Logger, tc tokens.Counter, budget int, in []string, round int, pointers string) ([]string, error) {
	var out []string
	for i := 0; i < len(in); {
		var b strings.Builder
		n, j := 0, i
		for ; j < len(in); j++ {
			part := fmt.Sprintf("<summary part=\"%d\">\n%s\n</summary>\n", j+1, in[j])
			k := tc.Count(part)
			if k > budget/3 {
				part, k = fitTokens(tc, part, budget/3)
			}
			if j > i && n+k > budget {
				break
			}
			b.WriteString(part)
			n += k
		}
		if j-i == 1 {
			out = append(out, in[i])
			i = j
			continue
		}
		merged, err := s.call(ctx, log, MergePrompt+"\n\n"+b.String()+strings.TrimPrefix(pointers, "\n"), fmt.Sprintf("merge round %d", round))
		if err != nil {
			return nil, err
		}
		out = append(out, merged)
		i = j
	}
	return out, nil
}

func (s *ModelSummarizer) call(ctx context.Context, log *slog.Logger, prompt, what string) (string, error) {
	log.Debug("compact: summary call", "call", what, "prompt_chars", utf8.RuneCountInString(prompt))
	out, err := s.Model.Complete(ctx, SystemPrompt, prompt)
	if err != nil {
		return "", err
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return "", fmt.Errorf("%w (%s)", ErrEmptySummary, what)
	}
	return out, nil
}

// finish makes sure the summary starts with SummaryTitle, names the
// archive when its name is stable (an artifact id) and the pointers do not
// (a file path, which carries a timestamp, is left out of that sentence),
// and ends with the pointer section of req.Pointers (WithPointers): the
// pointers a model left out or changed are put back.
func finish(summary string, req Request) string {
	summary = strings.TrimSpace(summary)
	if !strings.HasPrefix(summary, SummaryTitle) {
		summary = SummaryTitle + "\n\n" + summary
	}
	archive := req.Archive
	if stableArchive(archive) && !strings.Contains(summary, archive) && !slices.ContainsFunc(req.Pointers, func(p Pointer) bool { return p.ArtifactID == archive }) {
		summary += "\n\n" + archiveLine(archive)
	}
	return WithPointers(summary, req.Pointers)
}

// Render writes msgs as readable text for a summarizer, one numbered
// section per message, with tool calls as readable calls (see FormatCall),
// not JSON:
//
//	[3] assistant
//	I'll run the tests.
//	[call toolu_1] Bash(command: go test ./..., description: Run the tests)
//
// Tool results show their call's id and whether they failed; a result that
// prune or offload replaced shows "(output not available here)" instead of
// the placeholder. Tool results, tool input strings and thinking longer
// than maxChars characters keep their beginning and end around a note of
// what was left out (maxChars ≤ 0 means DefaultMaxResultChars). Images and
// documents appear as a note.
func Render(msgs []agentctx.Message, maxChars int) string {
	if maxChars <= 0 {
		maxChars = DefaultMaxResultChars
	}
	var b strings.Builder
	for i, m := range msgs {
		b.WriteString(renderMessage(i+1, m, maxChars))
	}
	return b.String()
}

func renderMessage(n int, m agentctx.Message, maxChars int) string {
	var b strings.Builder
	role := m.Role
	if role == "" {
		role = "unknown"
	}
	if IsSummary(m) {
		role += " (earlier summary)"
	}
	fmt.Fprintf(&b, "[%d] %s\n", n, role)
	if m.Role == agentctx.RoleTool {
		status := ""
		if resultFailed(m.Content, false, m.Status()) {
			status = ` status="error"`
		}
		fmt.Fprintf(&b, "<tool_result id=%q%s>%s</tool_result>\n", m.ToolCallID, status, resultBody(m.Content.AsText(), maxChars))
	} else {
		renderContent(&b, m, m.Content, maxChars)
	}
	for _, tc := range m.ToolCalls {
		b.WriteString(callLine(tc.ID, tc.Function.Name, []byte(tc.Function.Arguments), maxChars))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.String()
}

func renderContent(b *strings.Builder, m agentctx.Message, c agentctx.Content, maxChars int) {
	switch c.Kind() {
	case agentctx.ContentText:
		b.WriteString(c.Text())
		b.WriteByte('\n')
		return
	case agentctx.ContentBlocks:
	case agentctx.ContentOther:
		b.WriteString(shorten(c.AsText(), maxChars))
		b.WriteByte('\n')
		return
	default:
		return
	}
	for _, bl := range c.Blocks() {
		switch bl.Type {
		case agentctx.BlockText:
			b.WriteString(bl.Text)
			b.WriteByte('\n')
		case agentctx.BlockThinking:
			fmt.Fprintf(b, "<thinking>%s</thinking>\n", shorten(bl.Thinking, maxChars))
		case agentctx.BlockToolUse:
			b.WriteString(callLine(bl.ID, bl.Name, bl.Input, maxChars))
			b.WriteByte('\n')
		case agentctx.BlockToolResult:
			status := ""
			if resultFailed(bl.Content, bl.IsError, m.Status()) {
				status = ` status="error"`
			}
			fmt.Fprintf(b, "<tool_result id=%q%s>%s</tool_result>\n", bl.ToolUseID, status, resultBody(resultText(bl.Content), maxChars))
		case agentctx.BlockRedactedThinking:
			b.WriteString("<thinking>(redacted)</thinking>\n")
		default:
			fmt.Fprintf(b, "[%s]\n", bl.Type)
		}
	}
}

// standInNote replaces, in the rendering, a result that prune or offload
// replaced: the summarizer is told the output is gone rather than shown a
// placeholder it might quote.
const standInNote = "(output not available here)"

func resultBody(text string, maxChars int) string {
	if isStandIn(text) {
		return standInNote
	}
	return shorten(text, maxChars)
}

// resultText is the text of a tool result's content: a string as is, the
// text blocks of a list joined (other blocks as a note), anything else as
// JSON.
func resultText(c agentctx.Content) string {
	if c.Kind() != agentctx.ContentBlocks {
		return c.AsText()
	}
	if bs := c.Blocks(); len(bs) == 1 && bs[0].Type == agentctx.BlockText {
		return bs[0].Text
	}
	var parts []string
	for _, b := range c.Blocks() {
		switch b.Type {
		case agentctx.BlockText:
			parts = append(parts, b.Text)
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// scratchResultText is resultText for a reader that keeps none of it: a
// text joined from several blocks is written into *scratch, which grows
// to the longest (a compaction of real turns joined 2 MB only to read
// it), and borrowed reports whether the text is *scratch's bytes.
func scratchResultText(c agentctx.Content, scratch *[]byte) (text string, borrowedText bool) {
	bs := c.Blocks()
	if c.Kind() != agentctx.ContentBlocks || len(bs) == 1 && bs[0].Type == agentctx.BlockText {
		return resultText(c), false
	}
	b := (*scratch)[:0]
	for i, bl := range bs {
		if i > 0 {
			b = append(b, '\n')
		}
		if bl.Type == agentctx.BlockText {
			b = append(b, bl.Text...)
		} else {
			b = append(b, '[')
			b = append(b, bl.Type...)
			b = append(b, ']')
		}
	}
	*scratch = b
	return borrowed(b), true
}

// shorten keeps s whole up to max characters; a longer s keeps its first
// two thirds and last third of max around a note of what was left out.
func shorten(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	head := max * 2 / 3
	tail := max - head
	return runePrefix(s, head) + fmt.Sprintf("\n[... %d characters omitted ...]\n", n-head-tail) + runeSuffix(s, tail)
}

// fitTokens shortens text until it has at most budget tokens.
func fitTokens(tc tokens.Counter, text string, budget int) (string, int) {
	n := tc.Count(text)
	chars := utf8.RuneCountInString(text)
	for i := 0; n > budget && chars > 16 && i < 20; i++ {
		chars = int(float64(chars) * float64(budget) / float64(n) * 0.9)
		text = shorten(text, chars)
		n = tc.Count(text)
	}
	return text, n
}

func runePrefix(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

func runeSuffix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := len(s)
	for c := 0; c < n && i > 0; c++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
