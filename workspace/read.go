package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/textfmt"
)

// The reads below return the text an agent tool returns (see Tools and
// Execute). Each is capped by Options.MaxChars (default 40,000 characters):
// under the cap the text is exactly what was asked for; over it, the first
// part that fits, cut at a line end where one fits, and a notice in square
// brackets that says what was left out and which call reads on. With the
// notice, the text stays within the cap (for caps above a few hundred
// characters). With a SessionID, the id of a read names that session's
// result (see Resolve: two sessions may hold results of one tool call id).

// GetKnowledgeByID returns an artifact's content from the character offset
// on (0: all of it). Under the read cap it is the stored content byte for
// byte, so reading back a small tool result gives exactly the original. An
// offset beyond the content is ErrInvalidRange.
func (w *Workspace) GetKnowledgeByID(ctx context.Context, id string, offset int) (string, error) {
	id, err := w.scopedID(ctx, id)
	if err != nil {
		return "", err
	}
	a, err := w.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if offset < 0 || offset > 0 && offset >= a.Chars {
		return "", &Error{Op: "get", Namespace: w.opts.Namespace, ID: id,
			Err: fmt.Errorf("%w: offset %d is beyond the end (%d characters)", ErrInvalidRange, offset, a.Chars)}
	}
	start := byteOffset(a.Content, offset)
	text := a.Content[start:]
	limit := w.opts.MaxChars
	if limit < 0 || utf8.RuneCountInString(text) <= limit {
		return text, nil
	}
	first := 1 + strings.Count(a.Content[:start], "\n")
	q := quote(id)
	return fitNotice(limit, func(budget int) (string, string) {
		shown, whole := fitText(text, budget)
		shownChars := utf8.RuneCountInString(shown)
		last := first + strings.Count(shown, "\n")
		if whole {
			last-- // shown ends with a line's "\n"
		}
		var n strings.Builder
		fmt.Fprintf(&n, "[Read limit of %s characters reached: showing characters %s-%s of %s (lines %d-%d of %d",
			textfmt.Thousands(limit), textfmt.Thousands(offset+1), textfmt.Thousands(offset+shownChars), textfmt.Thousands(a.Chars), first, last, a.Lines)
		if !whole {
			fmt.Fprintf(&n, ", line %d cut", last)
		}
		fmt.Fprintf(&n, "). Continue with get_knowledge_by_id(artifact_id=%s, offset=%d)", q, offset+shownChars)
		if whole && last < a.Lines {
			fmt.Fprintf(&n, " or get_knowledge_by_lines(artifact_id=%s, start_line=%d, end_line=%d)",
				q, last+1, min(a.Lines, last+1+(last-first)))
		}
		n.WriteString(", or search it with grep_knowledge.]")
		return shown, n.String()
	}), nil
}

// GetKnowledgeByLines returns lines start..end of an artifact (1-based,
// inclusive; an end past the last line is clamped), after a header
// "Lines a-b of N". A start below 1, after end, or past the last line is
// ErrInvalidRange.
func (w *Workspace) GetKnowledgeByLines(ctx context.Context, id string, start, end int) (string, error) {
	var (
		lr *LineRange
		ns string
	)
	id, err := w.scopedID(ctx, id)
	if err != nil {
		return "", err
	}
	err = w.byID(func(namespace string) (err error) {
		lr, err = Lines(ctx, w.store, namespace, id, start, end)
		ns = namespace
		return err
	})
	if err != nil {
		return "", err
	}
	header := fmt.Sprintf("Lines %d-%d of %d", lr.Start, lr.End, lr.Total)
	limit := w.opts.MaxChars
	body := strings.Join(lr.Lines, "\n")
	if limit < 0 || utf8.RuneCountInString(header)+1+utf8.RuneCountInString(body) <= limit {
		return header + "\n" + body, nil
	}
	q := quote(id)
	wholeLines := func(budget int) (string, string) {
		k, _ := fitLines(lr.Lines, budget-len(header)-1)
		k = max(k, 1)
		last := lr.Start + k - 1
		header := fmt.Sprintf("Lines %d-%d of %d", lr.Start, last, lr.Total)
		return header + "\n" + strings.Join(lr.Lines[:k], "\n"),
			fmt.Sprintf("[Read limit of %s characters reached: lines %d-%d not shown. Continue with get_knowledge_by_lines(artifact_id=%s, start_line=%d, end_line=%d).]",
				textfmt.Thousands(limit), last+1, lr.End, q, last+1, lr.End)
	}
	if text, notice := wholeLines(0); utf8.RuneCountInString(text)+2+utf8.RuneCountInString(notice) <= limit {
		return fitNotice(limit, wholeLines), nil // at least the first line fits whole
	}
	// The first line alone is over the cap: show its start and point at the
	// character offset where it goes on.
	a, err := w.store.Get(ctx, ns, id)
	if err != nil {
		return "", err
	}
	lineStart := utf8.RuneCountInString(a.Content[:nthLineStart(a.Content, lr.Start)])
	lineChars := utf8.RuneCountInString(lr.Lines[0])
	header = fmt.Sprintf("Lines %d-%d of %d", lr.Start, lr.Start, lr.Total)
	return fitNotice(limit, func(budget int) (string, string) {
		_, partial := fitLines(lr.Lines[:1], max(budget-len(header)-1, 1))
		shown := utf8.RuneCountInString(partial)
		notice := fmt.Sprintf("[Read limit of %s characters reached: line %d is %s characters long and is cut after %s. Continue it with get_knowledge_by_id(artifact_id=%s, offset=%d)",
			textfmt.Thousands(limit), lr.Start, textfmt.Thousands(lineChars), textfmt.Thousands(shown), q, lineStart+shown)
		if lr.Start < lr.End {
			notice += fmt.Sprintf(", and read the next lines with get_knowledge_by_lines(artifact_id=%s, start_line=%d, end_line=%d)", q, lr.Start+1, lr.End)
		}
		return header + "\n" + partial, notice + ".]"
	}), nil
}

// GrepOptions shape a grep read.
type GrepOptions struct {
	IgnoreCase bool // match letters in any case
	Context    int  // lines shown before and after each match
	// MaxResults caps the matching lines shown: 0 means the workspace's
	// default (100), a negative value means no cap.
	MaxResults int
}

func (w *Workspace) grepQuery(pattern string, o GrepOptions) GrepQuery {
	q := GrepQuery{Pattern: pattern, IgnoreCase: o.IgnoreCase, Context: max(o.Context, 0), MaxResults: o.MaxResults}
	if q.MaxResults == 0 {
		q.MaxResults = w.opts.MaxResults
	}
	return q
}

// GrepKnowledge searches the lines of an artifact for an RE2 regular
// expression and returns them as grep does: "N:line" for a matching line,
// "N-line" for a context line, "--" between groups when context lines were
// asked for. When more lines match than MaxResults (100 by default), a
// warning says how many were left out. No match is not an error.
func (w *Workspace) GrepKnowledge(ctx context.Context, id, pattern string, o GrepOptions) (string, error) {
	id, err := w.scopedID(ctx, id)
	if err != nil {
		return "", err
	}
	q := w.grepQuery(pattern, o)
	q.ID = id
	var res *GrepResult
	err = w.byID(func(namespace string) (err error) {
		res, err = Grep(ctx, w.store, namespace, q)
		return err
	})
	if err != nil {
		return "", err
	}
	if res.Total == 0 {
		return fmt.Sprintf("No lines of %s match %s (%s lines searched).", id, quote(pattern), textfmt.Thousands(res.Lines)), nil
	}
	return w.renderGrep(res, q, false), nil
}

// SessionGrepOptions shape a grep over many artifacts.
type SessionGrepOptions struct {
	GrepOptions
	// SessionID selects the session; "" means the workspace's SessionID,
	// and every session of the namespace when that is empty too.
	SessionID string
	// TaskID, when set, narrows the search to one task.
	TaskID string
}

// GrepSession searches every offloaded tool result of a session (see
// SessionGrepOptions.SessionID), or of the whole namespace, in the order
// they were stored. Lines are written "ID:N:line" for a match and
// "ID-N-line" for context, as grep does for several files.
func (w *Workspace) GrepSession(ctx context.Context, pattern string, o SessionGrepOptions) (string, error) {
	q := w.grepQuery(pattern, o.GrepOptions)
	q.Filter = Filter{Metadata: Metadata{KeyContextType: ContextToolResult}}
	if o.SessionID == "" {
		o.SessionID = w.opts.SessionID
	}
	if o.SessionID != "" {
		q.Filter.Metadata[KeySessionID] = o.SessionID
	}
	if o.TaskID != "" {
		q.Filter.Metadata[KeyTaskID] = o.TaskID
	}
	res, err := Grep(ctx, w.store, w.opts.Namespace, q)
	if err != nil {
		return "", err
	}
	if res.Total == 0 {
		return fmt.Sprintf("No lines match %s in %s offloaded tool results.", quote(pattern), textfmt.Thousands(res.Searched)), nil
	}
	return w.renderGrep(res, q, true), nil
}

func (w *Workspace) renderGrep(res *GrepResult, q GrepQuery, withID bool) string {
	var lines []string
	for _, h := range res.Hits {
		prev := 0
		if q.Context > 0 && len(lines) > 0 {
			lines = append(lines, "--")
		}
		for _, l := range h.Lines {
			if q.Context > 0 && prev > 0 && l.Number > prev+1 {
				lines = append(lines, "--")
			}
			prev = l.Number
			sep := "-"
			if l.Match {
				sep = ":"
			}
			if withID {
				lines = append(lines, h.ID+sep+fmt.Sprint(l.Number)+sep+l.Text)
			} else {
				lines = append(lines, fmt.Sprint(l.Number)+sep+l.Text)
			}
		}
	}
	var warning string
	if res.Limited() {
		warning = fmt.Sprintf("[Showing the first %s of %s matching lines (max_results=%d). Narrow the pattern or raise max_results to see more.]",
			textfmt.Thousands(res.Matches), textfmt.Thousands(res.Total), q.Limit())
	}
	limit := w.opts.MaxChars
	text := strings.Join(lines, "\n")
	if limit < 0 || utf8.RuneCountInString(text)+utf8.RuneCountInString(warning)+2 <= limit {
		return withNotice(text, warning)
	}
	return fitNotice(limit, func(budget int) (string, string) {
		k, partial := fitLines(lines, budget)
		shown := strings.Join(lines[:k], "\n")
		if k == 0 {
			shown = partial
		}
		notice := fmt.Sprintf("[Read limit of %s characters reached: %s of %s output lines shown. Narrow the pattern, use fewer context_lines, or read around a match with get_knowledge_by_lines.]",
			textfmt.Thousands(limit), textfmt.Thousands(k), textfmt.Thousands(len(lines)))
		if warning != "" {
			notice += "\n" + warning
		}
		return shown, notice
	})
}

// ArtifactSummary is how an artifact is listed to a model.
type ArtifactSummary struct {
	ID       string       `json:"id"`
	Type     ArtifactType `json:"type"`
	Created  time.Time    `json:"created_at"`
	Chars    int          `json:"chars"`
	Lines    int          `json:"lines"`
	Metadata Metadata     `json:"metadata"`
}

// QueryArtifacts lists the artifacts whose metadata matches f (seed:
// query_artifacts(search_filter)), as a JSON array with one artifact per
// line, ordered by creation. When f names no session_id, a workspace with
// a SessionID lists that session's artifacts, one without lists every
// session's.
func (w *Workspace) QueryArtifacts(ctx context.Context, f Filter) (string, error) {
	list, err := w.store.Query(ctx, w.opts.Namespace, w.sessionFilter(f))
	if err != nil {
		return "", err
	}
	items := make([]any, len(list))
	for i, info := range list {
		items[i] = ArtifactSummary{ID: info.ID, Type: info.Type, Created: info.Created, Chars: info.Chars, Lines: info.Lines, Metadata: info.Metadata}
	}
	return w.renderList(items, "narrow the filter or pass offset"), nil
}

// OffloadEntry is one offloaded tool result in the overview of
// ToolResultOffloadInfo.
type OffloadEntry struct {
	ArtifactID string    `json:"artifact_id"`
	BizID      string    `json:"biz_id"`
	ToolName   string    `json:"tool_name"`
	ActionName string    `json:"action_name"`
	TaskID     string    `json:"task_id,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	Chars      int       `json:"chars"`
	Lines      int       `json:"lines"`
	Created    time.Time `json:"created_at"`
}

// OffloadInfo lists the tool results offloaded to a namespace of s,
// optionally only those of one task and/or session (seed 003:
// get_tool_result_offload_info(namespace, task_id=None, session_id=None)).
func OffloadInfo(ctx context.Context, s Store, namespace, taskID, sessionID string) ([]OffloadEntry, error) {
	f := Filter{Metadata: Metadata{KeyContextType: ContextToolResult}}
	if taskID != "" {
		f.Metadata[KeyTaskID] = taskID
	}
	if sessionID != "" {
		f.Metadata[KeySessionID] = sessionID
	}
	list, err := s.Query(ctx, namespace, f)
	if err != nil {
		return nil, err
	}
	out := make([]OffloadEntry, len(list))
	for i, info := range list {
		md := info.Metadata
		out[i] = OffloadEntry{ArtifactID: info.ID, BizID: md[KeyBizID], ToolName: md[KeyToolName], ActionName: md[KeyActionName],
			TaskID: md[KeyTaskID], SessionID: md[KeySessionID], Chars: info.Chars, Lines: info.Lines, Created: info.Created}
	}
	return out, nil
}

// ToolResultOffloadInfo returns the overview of the workspace's offloaded
// tool results (see OffloadInfo) as a JSON array, one result per line:
// those of sessionID; when that is "", of the workspace's SessionID, or of
// every session when the workspace has none.
func (w *Workspace) ToolResultOffloadInfo(ctx context.Context, taskID, sessionID string) (string, error) {
	if sessionID == "" {
		sessionID = w.opts.SessionID
	}
	list, err := OffloadInfo(ctx, w.store, w.opts.Namespace, taskID, sessionID)
	if err != nil {
		return "", err
	}
	items := make([]any, len(list))
	for i, e := range list {
		items[i] = e
	}
	return w.renderList(items, "narrow it by task_id or session_id"), nil
}

// renderList writes items as a JSON array with one item per line, cut to
// the read cap.
func (w *Workspace) renderList(items []any, hint string) string {
	lines := make([]string, len(items))
	for i, it := range items {
		b, _ := rawjson.Marshal(it) // values of plain struct types: cannot fail
		lines[i] = string(b)
		if i < len(items)-1 {
			lines[i] += ","
		}
	}
	if len(lines) == 0 {
		return "[]"
	}
	text := "[\n" + strings.Join(lines, "\n") + "\n]"
	limit := w.opts.MaxChars
	if limit < 0 || utf8.RuneCountInString(text) <= limit {
		return text
	}
	return fitNotice(limit, func(budget int) (string, string) {
		k, _ := fitLines(lines, budget-4)
		shown := slices.Clone(lines[:k])
		if k > 0 {
			shown[k-1] = strings.TrimSuffix(shown[k-1], ",")
		}
		return "[\n" + strings.Join(shown, "\n") + "\n]",
			fmt.Sprintf("[Read limit of %s characters reached: %d of %d listed; %s.]", textfmt.Thousands(limit), k, len(items), hint)
	})
}

// fitNotice cuts a read to the cap: build returns the part of the text
// that fits in budget characters and the notice for that cut; the budget
// is sized so that both, with the blank line between them, fit in limit
// (unless limit is too small to hold the notice itself).
func fitNotice(limit int, build func(budget int) (text, notice string)) string {
	_, notice := build(max(limit-400, 1))
	// The second notice differs from the first only in its numbers.
	budget := limit - utf8.RuneCountInString(notice) - 2 - 24
	text, notice := build(max(budget, 1))
	return withNotice(text, notice)
}

// withNotice appends a notice after a blank line; an empty notice adds
// nothing.
func withNotice(text, notice string) string {
	if notice == "" {
		return text
	}
	if text == "" {
		return notice
	}
	return strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r") + "\n\n" + notice
}

// fitText returns the longest prefix of text made of whole lines (each
// with its "\n") within budget characters, and whole = true; when not even
// the first line fits, the first budget characters and whole = false.
func fitText(text string, budget int) (string, bool) {
	end, chars := 0, 0
	for end < len(text) {
		i := strings.IndexByte(text[end:], '\n')
		next := len(text)
		if i >= 0 {
			next = end + i + 1
		}
		n := utf8.RuneCountInString(text[end:next])
		if chars+n > budget {
			break
		}
		chars += n
		end = next
	}
	if end > 0 {
		return text[:end], true
	}
	return text[:byteOffset(text, budget)], false
}

// fitLines returns how many lines, joined by "\n", fit in budget
// characters; when none does, also the first line cut to the budget.
func fitLines(lines []string, budget int) (int, string) {
	chars := 0
	for i, l := range lines {
		n := utf8.RuneCountInString(l)
		if i > 0 {
			n++
		}
		if chars+n > budget {
			if i == 0 {
				return 0, l[:byteOffset(l, max(budget, 0))]
			}
			return i, ""
		}
		chars += n
	}
	return len(lines), ""
}

// byteOffset returns the byte index of the n-th character of s (len(s)
// when s is shorter).
func byteOffset(s string, n int) int {
	if n <= 0 {
		return 0
	}
	k := 0
	for i := range s {
		if k == n {
			return i
		}
		k++
	}
	return len(s)
}

// nthLineStart returns the byte index where line n (1-based) starts.
func nthLineStart(s string, n int) int {
	i := 0
	for range n - 1 {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return len(s)
		}
		i += j + 1
	}
	return i
}
