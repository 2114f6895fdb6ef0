package compact

import (
	"strconv"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/clientsaved"
	"github.com/agentctx/agentctx/internal/base/textfmt"
)

// PointerKind says what a Pointer names.
type PointerKind string

// Kinds of pointers.
const (
	// PointerResult names the stored original of one tool result.
	PointerResult PointerKind = "result"
	// PointerArchive names the archive of a compaction: the messages it
	// summarized, whole.
	PointerArchive PointerKind = "archive"
)

// A Pointer says where an original that a summary leaves out is stored:
// a tool result kept whole by the caller (a pipeline's workspace artifact
// tool_result_<id>), or the archive of a compaction. A summary carries the
// pointers of what it summarized in its last section (see PointersTitle),
// so that an agent with nothing but a file reader can still read an early
// value back after any number of compactions.
type Pointer struct {
	// Kind is PointerResult or PointerArchive.
	Kind PointerKind `json:"kind"`
	// ArtifactID is the id the original is stored under, read back with
	// get_knowledge_by_id(artifact_id="<id>"); empty when the original is
	// only a file (FileArchiver's archives).
	ArtifactID string `json:"artifact_id,omitempty"`
	// Path is the absolute path of a file that holds the original's
	// content, for stores that keep one (workspace.Pather); empty
	// otherwise.
	Path string `json:"path,omitempty"`
	// ToolCallID is the id of the call a result answers. It is not
	// written in the summary; Compact uses it to fill ToolName and Input.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName and Input name a result's call: the tool and the telling
	// part of its input (a command, a path), on one short line. Compact
	// fills them from the call in the summarized messages when they are
	// empty.
	ToolName string `json:"tool_name,omitempty"`
	Input    string `json:"input,omitempty"`
	// Chars and Lines are the size of a result's stored content, Bytes the
	// size of an archive, Messages the messages an archive holds; 0 when
	// unknown.
	Chars    int `json:"chars,omitempty"`
	Lines    int `json:"lines,omitempty"`
	Bytes    int `json:"bytes,omitempty"`
	Messages int `json:"messages,omitempty"`
}

// Key is what tells pointers apart: the artifact id, else the path.
func (p Pointer) Key() string {
	if p.ArtifactID != "" {
		return p.ArtifactID
	}
	return p.Path
}

// PointersTitle is the heading of the section of a summary that lists its
// pointers. The section is the summary's last, one line per pointer, in a
// fixed format that ParsePointers reads back:
//
//	## Stored originals
//	<one line on how to read them back>
//	- Bash `go test ./...` → tool_result_toolu_01 (/abs/.agentctx/ns/tool_result_toolu_01.txt, 60,127 chars, 812 lines)
//	- Archive of 89 messages → compact_4bbb520b5ce37c2c (/abs/.agentctx/ns/compact_4bbb520b5ce37c2c.txt, 123,456 bytes)
//
// A result's line is its tool, its input in backticks, the artifact id,
// then in parentheses its path (when there is one) and its size. An
// original without an artifact id shows its path after the arrow. The
// section holds nothing volatile, so the same pointers give the same
// bytes.
const PointersTitle = "Stored originals"

// pointersHeading is PointersTitle as a Markdown heading.
const pointersHeading = "## " + PointersTitle

// pointersIntro is the line under the heading.
const pointersIntro = `Kept whole: read one back with get_knowledge_by_id(artifact_id="<id>"), or read its file. An archive holds its messages as JSON, an earlier summary with its own stored originals included.`

// DefaultMaxPointers bounds the pointers of one summary (see
// Options.MaxPointers).
const DefaultMaxPointers = 50

// maxPointerInput bounds the input shown on a result's line, in
// characters.
const maxPointerInput = 60

const pointerArrow = " → "

// RenderPointers returns the pointer section of a summary for ps, in their
// order, duplicates (same Key) left out; "" when ps is empty. See
// PointersTitle for the format.
func RenderPointers(ps []Pointer) string {
	ps = MergePointers(ps)
	if len(ps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(pointersHeading)
	b.WriteByte('\n')
	b.WriteString(pointersIntro)
	for _, p := range ps {
		b.WriteString("\n- ")
		b.WriteString(p.line())
	}
	return b.String()
}

// line is the pointer's line, without its "- ".
func (p Pointer) line() string {
	var b strings.Builder
	if p.Kind == PointerArchive {
		b.WriteString("Archive")
		if p.Messages > 0 {
			b.WriteString(" of " + plural(p.Messages, "message"))
		}
	} else {
		name := clip(strings.ReplaceAll(p.ToolName, "→", "->"), 40)
		if name == "" {
			name = "Result"
		}
		b.WriteString(strings.ReplaceAll(name, " ", "_"))
		in := strings.NewReplacer("`", "'", "→", "->").Replace(p.Input)
		if in = clip(in, maxPointerInput); in != "" {
			b.WriteString(" `" + in + "`")
		}
	}
	b.WriteString(pointerArrow)
	var details []string
	switch {
	case p.ArtifactID != "":
		b.WriteString(p.ArtifactID)
		if p.Path != "" {
			details = append(details, p.Path)
		}
	default:
		b.WriteString(p.Path)
	}
	if p.Chars > 0 {
		details = append(details, textfmt.Thousands(p.Chars)+" chars")
	}
	if p.Lines > 0 {
		unit := " lines"
		if p.Lines == 1 {
			unit = " line"
		}
		details = append(details, textfmt.Thousands(p.Lines)+unit)
	}
	if p.Bytes > 0 {
		details = append(details, textfmt.Thousands(p.Bytes)+" bytes")
	}
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, ", ") + ")")
	}
	return b.String()
}

// ParsePointers returns the pointers listed in the pointer sections (see
// PointersTitle) of a summary, in order, duplicates left out. Lines that
// are not in the format are skipped. ToolCallID is never set (the section
// does not show it).
func ParsePointers(summary string) []Pointer {
	var out []Pointer
	in := false
	for _, line := range strings.Split(summary, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.HasPrefix(line, "#") {
			in = line == pointersHeading
			continue
		}
		if !in {
			continue
		}
		if p, ok := parsePointer(line); ok {
			out = append(out, p)
		}
	}
	return MergePointers(out)
}

// parsePointer reads one line of a pointer section.
func parsePointer(line string) (Pointer, bool) {
	rest, ok := strings.CutPrefix(line, "- ")
	if !ok {
		return Pointer{}, false
	}
	label, target, ok := strings.Cut(rest, pointerArrow)
	if !ok || label == "" || target == "" {
		return Pointer{}, false
	}
	var p Pointer
	if n, ok := archiveLabel(label); ok {
		p.Kind, p.Messages = PointerArchive, n
	} else {
		p.Kind = PointerResult
		name, in, _ := strings.Cut(label, " ")
		p.ToolName = name
		if name == "Result" {
			p.ToolName = ""
		}
		if in != "" {
			if len(in) < 2 || in[0] != '`' || in[len(in)-1] != '`' {
				return Pointer{}, false
			}
			p.Input = in[1 : len(in)-1]
		}
	}
	id, details, hasDetails := strings.Cut(target, " (")
	if hasDetails {
		d, ok := strings.CutSuffix(details, ")")
		if !ok {
			return Pointer{}, false
		}
		parts := strings.Split(d, ", ")
		// Sizes are the trailing parts; what is before them is the path
		// (which may hold ", ").
		k := len(parts)
		for k > 0 {
			num, unit, ok := strings.Cut(parts[k-1], " ")
			n, err := strconv.Atoi(strings.ReplaceAll(num, ",", ""))
			if !ok || err != nil || n < 0 {
				break
			}
			switch unit {
			case "chars":
				p.Chars = n
			case "lines", "line":
				p.Lines = n
			case "bytes":
				p.Bytes = n
			default:
				n = -1
			}
			if n < 0 {
				break
			}
			k--
		}
		p.Path = strings.Join(parts[:k], ", ")
	}
	switch {
	case strings.ContainsAny(id, "/\\"):
		// A path after the arrow may hold spaces (a Windows home, "C:\Users\Ada
		// Lovelace\.claude\…": a client's saved file); an artifact id never.
		if p.Path != "" {
			return Pointer{}, false
		}
		p.Path = id
	case strings.ContainsAny(id, " \t"):
		return Pointer{}, false
	default:
		p.ArtifactID = id
	}
	return p, true
}

// archiveLabel reads "Archive" or "Archive of N message(s)".
func archiveLabel(label string) (int, bool) {
	if label == "Archive" {
		return 0, true
	}
	rest, ok := strings.CutPrefix(label, "Archive of ")
	if !ok {
		return 0, false
	}
	num, unit, ok := strings.Cut(rest, " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || (unit != "message" && unit != "messages") {
		return 0, false
	}
	return n, true
}

// MergePointers returns the pointers of the lists, in order, each Key
// once: the first keeps its place, and its empty fields are filled from
// the later ones. Pointers without a Key are left out.
func MergePointers(lists ...[]Pointer) []Pointer {
	var out []Pointer
	at := map[string]int{}
	for _, l := range lists {
		for _, p := range l {
			k := p.Key()
			if k == "" {
				continue
			}
			i, dup := at[k]
			if !dup {
				at[k] = len(out)
				out = append(out, p)
				continue
			}
			q := &out[i]
			fill(&q.ArtifactID, p.ArtifactID)
			fill(&q.Path, p.Path)
			fill(&q.ToolCallID, p.ToolCallID)
			fill(&q.ToolName, p.ToolName)
			fill(&q.Input, p.Input)
			fillInt(&q.Chars, p.Chars)
			fillInt(&q.Lines, p.Lines)
			fillInt(&q.Bytes, p.Bytes)
			fillInt(&q.Messages, p.Messages)
		}
	}
	return out
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func fillInt(dst *int, v int) {
	if *dst == 0 {
		*dst = v
	}
}

// WithPointers returns summary with ps as its pointer section: any pointer
// section the summary has (a model may have copied it, or changed it) is
// taken out, and the section of ps is put at the end, so that every pointer
// is there once, in the format ParsePointers reads. A summary that already
// ends with exactly that section comes back unchanged. With no pointers,
// summary comes back as it is. Compact applies it to every summary, of any
// Summarizer.
func WithPointers(summary string, ps []Pointer) string {
	section := RenderPointers(ps)
	if section == "" {
		return summary
	}
	return strings.TrimRight(StripPointers(summary), " \n") + "\n\n" + section
}

// StripPointers returns summary without its pointer sections.
func StripPointers(summary string) string {
	if !strings.Contains(summary, pointersHeading) {
		return summary
	}
	lines := strings.Split(summary, "\n")
	out := lines[:0]
	in := false
	for _, line := range lines {
		t := strings.TrimRight(line, " \t\r")
		if strings.HasPrefix(t, "#") {
			in = t == pointersHeading
		}
		if !in {
			out = append(out, line)
		}
	}
	return strings.TrimRight(strings.Join(out, "\n"), " \n")
}

// capPointers keeps at most max pointers: the oldest results go first,
// then the oldest archives; the newest archive always stays. Nothing is
// lost: each archive holds the summary before it, with its pointers.
func capPointers(ps []Pointer, max int) []Pointer {
	if len(ps) <= max {
		return ps
	}
	drop := len(ps) - max
	gone := make([]bool, len(ps))
	for _, kind := range []PointerKind{PointerResult, PointerArchive} {
		for i := 0; i < len(ps) && drop > 0; i++ {
			if ps[i].Kind == kind && (kind != PointerArchive || !lastArchive(ps, i)) {
				gone[i] = true
				drop--
			}
		}
	}
	out := make([]Pointer, 0, max)
	for i, p := range ps {
		if !gone[i] {
			out = append(out, p)
		}
	}
	return out
}

func lastArchive(ps []Pointer, i int) bool {
	for _, p := range ps[i+1:] {
		if p.Kind == PointerArchive {
			return false
		}
	}
	return true
}

// pointersOf returns the pointers a compaction of source carries: those of
// the earlier summaries in source, then extra (the caller's, for the
// results in source), then each file a result of source says the client
// saved output to (savedPointers), then the archive's; each result's tool
// and input filled from its call in source when empty.
func pointersOf(source []agentctx.Message, extra []Pointer, archive *Pointer) []Pointer {
	var lists [][]Pointer
	for _, m := range source {
		if IsSummary(m) {
			lists = append(lists, ParsePointers(messageText(m)))
		}
	}
	lists = append(lists, extra, savedPointers(source))
	if archive != nil {
		lists = append(lists, []Pointer{*archive})
	}
	ps := MergePointers(lists...)
	// The calls of the results that lack their tool or input, the last of
	// each id: only those (a map of every call was 1.6 MB for a compaction
	// of 10 MB of real turns).
	var calls map[string]agentctx.ToolUse
	for _, p := range ps {
		if p.Kind == PointerResult && p.ToolCallID != "" && (p.ToolName == "" || p.Input == "") {
			if calls == nil {
				calls = map[string]agentctx.ToolUse{}
			}
			calls[p.ToolCallID] = agentctx.ToolUse{}
		}
	}
	if calls == nil {
		return ps
	}
	found := make(map[string]bool, len(calls))
	for u := range agentctx.ToolUses(source) {
		if _, want := calls[u.ID]; want {
			calls[u.ID], found[u.ID] = u, true
		}
	}
	for i := range ps {
		p := &ps[i]
		u, ok := calls[p.ToolCallID]
		if p.Kind != PointerResult || p.ToolCallID == "" || !ok || !found[p.ToolCallID] {
			continue
		}
		fill(&p.ToolName, u.Name)
		if p.Input == "" {
			in, parsed := parseInput(u.Input)
			p.Input = inputKey(&in, parsed, u.Input)
		}
	}
	return ps
}

// savedPointers returns a pointer, by its path, to each file that a result
// of source says the client saved output to (internal/base/clientsaved:
// Claude Code's, opencode's, Kilo's and Qwen Code's preview of a long
// output), whatever the preview's size. The preview is summarized away
// with the middle, and its path is then the one way to the whole output
// that needs no archive (issue 47: Claude Code's 2,338-character preview
// was under every size mark, and the read-back took 3 reads).
func savedPointers(source []agentctx.Message) []Pointer {
	var out []Pointer
	for r := range agentctx.ToolResults(source) {
		var paths []string
		switch c := r.Content; c.Kind() {
		case agentctx.ContentText:
			paths = clientsaved.Append(nil, c.Text())
		case agentctx.ContentBlocks:
			for _, b := range c.Blocks() {
				if b.Type == agentctx.BlockText {
					paths = clientsaved.Append(paths, b.Text)
				}
			}
		}
		for _, p := range paths {
			out = append(out, Pointer{Kind: PointerResult, Path: p, ToolCallID: r.ID})
		}
	}
	return out
}
