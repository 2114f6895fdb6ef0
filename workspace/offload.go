package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/bufpool"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/base/textfmt"

	"github.com/agentctx/agentctx/workspace/driver"
)

// ToolCall identifies the call a tool result answers.
type ToolCall struct {
	ID     string // the tool call id (tool_use id / tool_call_id); required
	Name   string // the tool's name
	Action string // the tool's action, when it has several (see DefaultActionName)
	// Input is the call's input (its arguments), when known: it tells a
	// read of the workspace's own content files (see ReadsBack).
	Input json.RawMessage
	// ReadsSaved is set by a caller that knows the call reads a file the
	// client saved output to, whose path an earlier result named
	// (NamesSavedPath of SavedPaths): its result is kept whole, as a read
	// of the workspace's own content is (ReadsBack).
	ReadsSaved bool
	// Sent is the result's content as sent, when decoding its string
	// lost something (agentctx.SentString: a lone surrogate escape): the
	// result is stored as this JSON string token (EncodingJSONToken), so
	// that it is given back as sent.
	Sent json.RawMessage
}

// Offloaded describes one tool result stored by an offload.
type Offloaded struct {
	Info
	// Message and Block locate the result in the offloaded list (Block is
	// -1 for a role "tool" message); both are -1 for OffloadToolResult.
	Message int `json:"message_index"`
	Block   int `json:"block_index"`
	// Indexed reports that the result was replaced by a <knowledge_list>
	// entry; otherwise it stayed in the context whole.
	Indexed bool `json:"indexed"`
	// Unchanged reports that the store already held this result with the
	// same content and metadata, so nothing was written.
	Unchanged bool `json:"unchanged"`
	// ReadBack reports that the call read the workspace's own stored
	// content (ReadsBack): the result stays in the context whatever its
	// size.
	ReadBack bool `json:"read_back,omitempty"`
	// OverBudget reports that storing the result would have passed the
	// workspace's byte budget (Options.Budget): nothing was stored (the
	// Info is empty) and the result stays in the context as it was.
	OverBudget bool `json:"over_budget,omitempty"`
}

// OffloadResult is the result of Offload.
type OffloadResult struct {
	// Messages is the new list: results of DefaultInlineLimit characters
	// or more are replaced by a <knowledge_list> entry; every other message
	// is shared with the input.
	Messages  []agentctx.Message `json:"messages"`
	Artifacts []Offloaded        `json:"artifacts"` // every stored result, in order
	Inlined   int                `json:"inlined"`   // results kept whole in the context
	Indexed   int                `json:"indexed"`   // results replaced by a <knowledge_list> entry
}

// Offload stores every tool result in msgs whole as the artifact
// tool_result_<tool_call_id> (SPEC §5, seed 003) and returns the list to
// send: a result under the inline limit (40,000 characters) keeps its
// content; a larger one is replaced by a <knowledge_list> entry naming the
// artifact, with a short preview and the tools that read it back.
//
// Results are walked oldest first, blocks in order; the tool name and
// action come from the call with the same id. A result that already is a
// <knowledge_list> entry for its own artifact (an earlier Offload of the
// same history) is left alone, and a result the store already holds
// unchanged is not written again, so offloading a growing history before
// every model request only writes the new results. msgs is never modified.
//
// A second result with the id of an earlier one (a model that reuses ids
// across turns) is stored under a suffixed id (see OffloadToolResult), so
// the first is never overwritten. A result
// without an id is an error matching ErrInvalidID, before anything is
// stored. When the store fails, Offload stops and returns the error; what
// was stored stays.
func (w *Workspace) Offload(ctx context.Context, msgs []agentctx.Message) (*OffloadResult, error) {
	calls := make(map[string]agentctx.ToolUse)
	for u := range agentctx.ToolUses(msgs) {
		if _, dup := calls[u.ID]; !dup {
			calls[u.ID] = u
		}
	}
	for r := range agentctx.ToolResults(msgs) {
		if r.ID == "" { // checked first, so that nothing is written
			return nil, fmt.Errorf("workspace: offload: tool result %d of message %d has no tool call id: %w", max(r.Block, 0), r.Message, ErrInvalidID)
		}
	}
	res := &OffloadResult{Artifacts: []Offloaded{}}
	var err error
	var saved []string // the files earlier results say the client saved output to
	res.Messages = agentctx.MapToolResults(msgs, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		if err != nil {
			return agentctx.Content{}, false
		}
		if w.isOwnReference(r) {
			w.log.DebugContext(ctx, "workspace: tool result is already a reference",
				KeyContextType, ContextToolResult, KeyBizID, r.ID)
			return agentctx.Content{}, false
		}
		call := ToolCall{ID: r.ID}
		if u, ok := calls[r.ID]; ok {
			call.Name, call.Action, call.Input = u.Name, w.opts.ActionName(u), u.Input
			call.ReadsSaved = NamesSavedPath(u.Input, saved)
		}
		saved = append(saved, SavedPaths(r.Content)...)
		var (
			c   agentctx.Content
			off Offloaded
		)
		call.Sent, _ = agentctx.SentString(msgs[r.Message], r.Block)
		c, off, err = w.OffloadToolResult(ctx, call, r.Content)
		if err != nil {
			err = fmt.Errorf("tool result %d of message %d: %w", max(r.Block, 0), r.Message, err)
			return agentctx.Content{}, false
		}
		if off.OverBudget { // not stored: kept as it is
			res.Inlined++
			return agentctx.Content{}, false
		}
		off.Message, off.Block = r.Message, r.Block
		res.Artifacts = append(res.Artifacts, off)
		if off.Indexed {
			res.Indexed++
			return c, true
		}
		res.Inlined++
		return agentctx.Content{}, false
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (w *Workspace) isOwnReference(r agentctx.ToolResult) bool {
	// The id may carry a suffix ("-2") after the artifact id of r.ID.
	return r.Content.IsText() && r.ID != "" &&
		strings.HasPrefix(r.Content.Text(), strings.TrimSuffix(referencePrefix(ArtifactID(r.ID)), `"`))
}

// OffloadToolResult stores one tool result whole and returns the content to
// put in the context in its place: content itself under the inline limit,
// else a <knowledge_list> entry (a string). The limit is measured on the
// text the model reads (InlineChars). A result of a call that reads the
// workspace's own content back (ReadsBack: a read-back tool, or the
// agent's file tool on an artifact's content file) always stays whole: the
// reading tool already bounded it to a page, and a reference in its place
// would send the agent back to what it just read.
//
// A string is stored as it is, with type text, unless it is one JSON
// string of several lines (an agent that sends its results JSON-encoded,
// as Cline does): that is stored as the text it encodes, so that its lines
// page and grep, with metadata encoding=json_string (KeyEncoding), from
// which OriginalContent gives the string back as sent. Content made only of text
// blocks (as SDKs send tool results) is stored as its text too, the blocks
// joined by newlines, so that lines, grep and previews work on it; the
// metadata key text_blocks keeps what OriginalContent needs to give the
// blocks back byte for byte. Any other content is stored as its compact
// JSON, with type json.
//
// An artifact is never overwritten with different content (SPEC §9): when
// tool_result_<id> already holds other content, the result is stored as
// tool_result_<id>-2 (then -3, ...), and the reference names that id. The
// same content under the same id is not written again. A free id is
// taken with Store.Create, so this holds for writers racing on one id
// (sessions of two proxies sharing a store, two processes): the loser
// finds the winner's artifact and takes the next id, or shares it when
// it holds the same result.
func (w *Workspace) OffloadToolResult(ctx context.Context, call ToolCall, content agentctx.Content) (agentctx.Content, Offloaded, error) {
	off := Offloaded{Message: -1, Block: -1}
	if call.ID == "" {
		return content, off, fmt.Errorf("workspace: offload: tool result without a tool call id: %w", ErrInvalidID)
	}
	a := w.toolResultArtifact(call, content)
	ns := w.opts.Namespace
	logAttrs := []any{KeyContextType, ContextToolResult, KeyBizID, call.ID, "namespace", ns}

	m := driver.Measure(a)
	off.Info = m.Info
	off.ReadBack = w.ReadsBack(call)
	off.Indexed = !off.ReadBack && InlineChars(content) >= w.opts.InlineLimit
	base := a.ID
	for k, lost := 1, 0; ; {
		if k > 1 {
			a.ID = base + "-" + strconv.Itoa(k)
		}
		if k > maxSuffix || lost > maxSuffix {
			err := fmt.Errorf("workspace: offload: %d artifacts already hold other results of tool call %q", maxSuffix, call.ID)
			w.log.ErrorContext(ctx, "workspace: storing a tool result failed", append(logAttrs, "error", err)...)
			return content, off, err
		}
		prev, err := w.store.Stat(ctx, ns, a.ID) // the description, not the content
		switch {
		case err == nil && (prev.SHA256 != m.SHA256 || prev.Type != m.Type):
			k++
			continue // another result holds this id: never overwrite it
		case err == nil && sameResult(prev.Metadata, m.Metadata):
			// The same result, stored by this or another session (a
			// resumed or forked conversation): the first writer keeps it.
			off.Info, off.Unchanged = prev, true
		case err == nil:
			// The same content with another description: Put replaces
			// only the description, the content stays what it was.
			info, err := w.store.Put(ctx, ns, a)
			if err != nil {
				w.log.ErrorContext(ctx, "workspace: storing a tool result failed", append(logAttrs, "artifact_id", a.ID, "error", err)...)
				return content, off, err
			}
			off.Info = info
		case errors.Is(err, ErrNotFound):
			// New bytes: within the byte budget, or not stored at all
			// (the result stays in the context as it came).
			if !w.budget.reserve(ctx, ns, w.opts.SessionID, int64(m.Bytes)) {
				return content, Offloaded{Message: -1, Block: -1, OverBudget: true}, nil
			}
			// Create, not Put: another writer may store this id between
			// the Stat and now (another proxy, another process); then
			// look at what it stored, on this id again.
			info, err := w.store.Create(ctx, ns, a)
			if err != nil {
				w.budget.release(ns, w.opts.SessionID, int64(m.Bytes))
			}
			if errors.Is(err, ErrExists) {
				lost++
				continue
			}
			if err != nil {
				w.log.ErrorContext(ctx, "workspace: storing a tool result failed", append(logAttrs, "artifact_id", a.ID, "error", err)...)
				return content, off, err
			}
			off.Info = info
		default:
			w.log.ErrorContext(ctx, "workspace: storing a tool result failed", append(logAttrs, "artifact_id", a.ID, "error", err)...)
			return content, off, err
		}
		break
	}
	w.log.InfoContext(ctx, "workspace: tool result offloaded", append(logAttrs, "artifact_id", off.ID,
		KeyToolName, call.Name, "chars", off.Chars, "lines", off.Lines, "indexed", off.Indexed, "unchanged", off.Unchanged)...)
	if !off.Indexed {
		return content, off, nil
	}
	return agentctx.Text(w.knowledgeList(off.Info, a.Content)), off, nil
}

// toolResultArtifact returns the artifact that stores call's result
// content, under the id tool_result_<id>: text as it is, text blocks as
// their joined text (with what gives the blocks back), anything else as
// JSON, described by the workspace's metadata and the call's.
func (w *Workspace) toolResultArtifact(call ToolCall, content agentctx.Content) Artifact {
	a := Artifact{Info: Info{ID: ArtifactID(call.ID), Type: TypeText, Created: w.opts.Now()}}
	md := cloneMetadata(w.opts.Metadata)
	var decoded string
	if content.IsText() {
		decoded = storeDecoded(content.Text())
	}
	switch text, lens, template, ok := textBlocks(content); {
	case len(call.Sent) > 0 && content.IsText():
		a.Content, md[KeyEncoding] = string(call.Sent), EncodingJSONToken
	case decoded != "":
		a.Content, md[KeyEncoding] = decoded, EncodingJSONString
	case content.IsText() || content.Kind() == agentctx.ContentNone:
		a.Content = content.AsText()
	case ok:
		a.Content = text
		md[KeyTextBlocks], md[KeyTextTemplate] = lens, template
	default:
		a.Content, a.Type = content.AsText(), TypeJSON
	}
	maps.Copy(md, Metadata{
		KeyContextType: ContextToolResult,
		KeyBizID:       call.ID,
		KeyAgentID:     w.opts.AgentID,
		KeyTaskID:      w.opts.TaskID,
		KeySessionID:   w.opts.SessionID,
		KeyToolName:    call.Name,
		KeyActionName:  call.Action,
	})
	a.Metadata = md
	return a
}

// sameResult reports whether two artifacts' metadata describe the same
// tool result, whoever stored it: equal but for the keys that say which
// session, agent and task wrote it.
func sameResult(a, b Metadata) bool {
	owner := func(k string) bool { return k == KeySessionID || k == KeyAgentID || k == KeyTaskID }
	for k, v := range a {
		if !owner(k) && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if !owner(k) && a[k] != v {
			return false
		}
	}
	return true
}

// maxSuffix bounds the suffixed ids tried for one tool call id.
const maxSuffix = 10_000

// KeyTextBlocks and KeyTextTemplate are the metadata keys of an artifact
// stored from a list of text blocks: the byte lengths of the blocks' texts,
// comma-separated (the content is the texts joined by newlines), and the
// list's JSON with every text empty (the other members of the blocks, in
// their order), from which OriginalContent rebuilds the list byte for byte.
const (
	KeyTextBlocks   = "text_blocks"
	KeyTextTemplate = "text_template"
)

// textBlocks returns the text of content made only of text blocks, joined
// by newlines, the byte lengths of the texts, and the list's template (see
// KeyTextTemplate); ok is false when the content has other blocks or the
// list cannot be rebuilt byte for byte from them.
func textBlocks(c agentctx.Content) (text, lens, template string, ok bool) {
	if c.Kind() != agentctx.ContentBlocks || len(c.Blocks()) == 0 {
		return "", "", "", false
	}
	var texts, ns []string
	empty := make([]agentctx.Block, 0, len(c.Blocks()))
	for _, b := range c.Blocks() {
		if b.Type != agentctx.BlockText {
			return "", "", "", false
		}
		texts = append(texts, b.Text)
		ns = append(ns, strconv.Itoa(len(b.Text)))
		b.Text = ""
		empty = append(empty, b)
	}
	template = agentctx.BlockList(empty...).AsText()
	back, err := fillTemplate(template, texts)
	if err != nil || !sameText(back, c) {
		return "", "", "", false
	}
	return strings.Join(texts, "\n"), strings.Join(ns, ","), template, true
}

// sameText reports whether a.AsText() == b.AsText(), the two written into
// pooled buffers rather than strings made for the comparison (two copies
// of every result of text blocks stored: 8 MB for a 10 MB request of a
// coding agent's turns).
func sameText(a, b agentctx.Content) bool {
	x, y := bufpool.Get(), bufpool.Get()
	*x, *y = a.AppendText(*x), b.AppendText(*y)
	same := bytes.Equal(*x, *y)
	bufpool.Put(x)
	bufpool.Put(y)
	return same
}

// fillTemplate puts texts into the text blocks of a template, in order.
func fillTemplate(template string, texts []string) (agentctx.Content, error) {
	var c agentctx.Content
	if err := c.UnmarshalJSON([]byte(template)); err != nil {
		return agentctx.Content{}, err
	}
	blocks := c.Blocks()
	if c.Kind() != agentctx.ContentBlocks || len(blocks) != len(texts) {
		return agentctx.Content{}, fmt.Errorf("template of %d blocks for %d texts", len(blocks), len(texts))
	}
	out := make([]agentctx.Block, len(blocks))
	for i, b := range blocks {
		b.Text = texts[i]
		out[i] = b
	}
	return agentctx.BlockList(out...), nil
}

// OriginalContent returns the content of the tool result an artifact was
// stored from, byte for byte as it was sent: a string for type text, the
// text blocks for an artifact with text_blocks metadata, the JSON value for
// type json, and the JSON string of the text for an artifact with
// encoding json_string metadata (KeyEncoding).
func OriginalContent(a *Artifact) (agentctx.Content, error) {
	if lens, ok := a.Metadata[KeyTextBlocks]; ok {
		var texts []string
		rest := a.Content
		for i, f := range strings.Split(lens, ",") {
			n, err := strconv.Atoi(f)
			if i > 0 {
				if !strings.HasPrefix(rest, "\n") {
					return agentctx.Content{}, fmt.Errorf("workspace: artifact %q: text blocks do not match %s=%q", a.ID, KeyTextBlocks, lens)
				}
				rest = rest[1:]
			}
			if err != nil || n < 0 || n > len(rest) {
				return agentctx.Content{}, fmt.Errorf("workspace: artifact %q: bad %s %q", a.ID, KeyTextBlocks, lens)
			}
			texts = append(texts, rest[:n])
			rest = rest[n:]
		}
		if rest != "" {
			return agentctx.Content{}, fmt.Errorf("workspace: artifact %q: text blocks do not match %s=%q", a.ID, KeyTextBlocks, lens)
		}
		return fillTemplate(a.Metadata[KeyTextTemplate], texts)
	}
	if a.Metadata[KeyEncoding] == EncodingJSONToken {
		// The string as sent is the stored token; a Content holds its
		// decoding, lone surrogates as U+FFFD (SentJSON gives the token).
		var c agentctx.Content
		if err := c.UnmarshalJSON([]byte(a.Content)); err != nil {
			return agentctx.Content{}, fmt.Errorf("workspace: artifact %q: %w", a.ID, err)
		}
		return c, nil
	}
	if a.Metadata[KeyEncoding] == EncodingJSONString {
		return agentctx.Text(string(rawjson.AppendString(nil, a.Content))), nil
	}
	if a.Type == TypeJSON {
		var c agentctx.Content
		if err := c.UnmarshalJSON([]byte(a.Content)); err != nil {
			return agentctx.Content{}, fmt.Errorf("workspace: artifact %q: %w", a.ID, err)
		}
		return c, nil
	}
	return agentctx.Text(a.Content), nil
}

// referencePrefix is how a <knowledge_list> entry for id starts.
func referencePrefix(id string) string {
	return "<knowledge_list>\n<knowledge id=\"" + attr(id) + "\""
}

var attrEscaper = strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;", "\n", "&#10;", "\r", "&#13;")

func attr(s string) string { return attrEscaper.Replace(s) }

// knowledgeList renders the replacement of a large tool result.
func (w *Workspace) knowledgeList(info Info, content string) string {
	var b strings.Builder
	b.WriteString(referencePrefix(info.ID))
	fmt.Fprintf(&b, " tool_name=\"%s\" action_name=\"%s\" type=\"%s\" chars=\"%d\" lines=\"%d\">\n",
		attr(info.Metadata[KeyToolName]), attr(info.Metadata[KeyActionName]), attr(string(info.Type)), info.Chars, info.Lines)
	head, tail, omitted := preview(content, w.opts.PreviewHeadLines, w.opts.PreviewTailLines, w.opts.PreviewChars)
	b.WriteString("<head>\n")
	for _, l := range head {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("</head>\n")
	if len(tail) > 0 {
		if omitted > 0 {
			fmt.Fprintf(&b, "[... %s lines not shown ...]\n", textfmt.Thousands(omitted))
		}
		b.WriteString("<tail>\n")
		for _, l := range tail {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		b.WriteString("</tail>\n")
	}
	q := quote(info.ID)
	fmt.Fprintf(&b, "<note>This tool result is too large for the context (%s characters, %s lines) and is stored whole as artifact %s. "+
		"Read what you need with get_knowledge_by_id(artifact_id=%s), get_knowledge_by_lines(artifact_id=%s, start_line, end_line) "+
		"or grep_knowledge(artifact_id=%s, pattern).</note>\n",
		textfmt.Thousands(info.Chars), textfmt.Thousands(info.Lines), q, q, q, q)
	b.WriteString("</knowledge>\n</knowledge_list>")
	return b.String()
}

// preview returns up to headN lines from the start and tailN lines from the
// end of content (not overlapping), each side within its share of budget
// characters (two thirds for the head), long lines cut with "…", and the
// number of lines between them.
func preview(content string, headN, tailN, budget int) (head, tail []string, omitted int) {
	total := driver.CountLines(content)
	headBudget := budget * 2 / 3
	tailBudget := budget - headBudget
	rest := content
	for len(head) < headN && rest != "" {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimSuffix(line, "\r")
		n := utf8.RuneCountInString(line)
		if n > headBudget {
			line, n = cut(line, headBudget), headBudget
		}
		head = append(head, line)
		headBudget -= n
		if headBudget <= 0 {
			break
		}
	}
	tailN = min(tailN, total-len(head))
	if tailN <= 0 {
		return head, nil, 0
	}
	// The last tailN lines, read from the end.
	end := strings.TrimSuffix(content, "\n")
	var lines []string
	for range tailN {
		i := strings.LastIndexByte(end, '\n')
		lines = append(lines, strings.TrimSuffix(end[i+1:], "\r"))
		if i < 0 {
			break
		}
		end = end[:i]
	}
	for i := 0; i < len(lines) && tailBudget > 0; i++ { // last line first: the end matters most
		line := lines[i]
		n := utf8.RuneCountInString(line)
		if n > tailBudget {
			// Keep the end of the line: that is where a log's last words are.
			line, n = cutFront(line, tailBudget), tailBudget
		}
		tail = append([]string{line}, tail...)
		tailBudget -= n
	}
	return head, tail, total - len(head) - len(tail)
}

// cut keeps the first n characters of s (n counts the "…" added).
func cut(s string, n int) string {
	if n <= 1 {
		return "…"
	}
	i, k := 0, 0
	for i < len(s) && k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "…"
}

// cutFront keeps the last n characters of s (n counts the "…" added).
func cutFront(s string, n int) string {
	if n <= 1 {
		return "…"
	}
	i, k := len(s), 0
	for i > 0 && k < n-1 {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		k++
	}
	return "…" + s[i:]
}

// ReadCall returns the call that reads an artifact back whole, as the
// model writes it: get_knowledge_by_id(artifact_id="<id>").
func ReadCall(id string) string { return ToolGetKnowledgeByID + "(artifact_id=" + quote(id) + ")" }

// quote writes a string argument as a tool call would: in double quotes,
// JSON-escaped.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
