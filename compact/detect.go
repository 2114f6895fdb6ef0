package compact

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
)

// resultFailed reports whether a tool result is a failure: is_error, a
// messageStatus of "error", or content that says so: it begins with
// "Error:" or "<tool_use_error>", its first line is "Exit code N" (Claude
// Code) or "<returncode>N</returncode>" (mini-swe-agent) with N ≠ 0, or it
// is a JSON object whose exitCode (exit_code, returncode) is not 0.
func resultFailed(c agentctx.Content, isError bool, status string) bool {
	return textFailed(resultText(c), isError, status)
}

// textFailed is resultFailed given the result's text (resultText).
func textFailed(text string, isError bool, status string) bool {
	if isError || status == "error" {
		return true
	}
	text = strings.TrimSpace(text)
	for _, p := range []string{"Error:", "error:", "ERROR:", "<tool_use_error>"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	if m := exitLine.FindStringSubmatch(firstLine(text)); m != nil {
		n := m[1] + m[2]
		return n != "0"
	}
	if strings.HasPrefix(text, "{") && len(text) < 1<<20 && (strings.Contains(text, "xit") || strings.Contains(text, "returncode")) {
		var v struct {
			ExitCode   *json.Number `json:"exitCode"`
			ExitCode2  *json.Number `json:"exit_code"`
			ReturnCode *json.Number `json:"returncode"`
		}
		if json.Unmarshal(unsafe.Slice(unsafe.StringData(text), len(text)), &v) == nil { // read, never written
			for _, n := range []*json.Number{v.ExitCode, v.ExitCode2, v.ReturnCode} {
				if n != nil {
					if f, err := n.Float64(); err == nil && f != 0 {
						return true
					}
				}
			}
		}
	}
	return false
}

var exitLine = regexp.MustCompile(`^(?:Exit code (-?\d+)|<returncode>(-?\d+)</returncode>)`)

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// keyLine picks the most telling line of a tool result: for a failure the
// first line that mentions an error, else the first line with content,
// skipping exit-code and output wrappers.
func keyLine(text string, failed bool, max int) string {
	var first, warning string
	lines := 200
	if failed {
		lines = 5000 // the error may come after a long log
	}
	for i := 0; i < lines && text != ""; i++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimSpace(line)
		if line == "" || noise(line) {
			continue
		}
		if first == "" {
			first = line
			if !failed {
				break
			}
		}
		if failed && mentionsError(line) {
			if !weakError(line) {
				return clip(line, max)
			}
			if warning == "" {
				warning = line
			}
		}
	}
	if warning != "" {
		return clip(warning, max)
	}
	return clip(first, max)
}

func noise(line string) bool {
	if exitLine.MatchString(line) && len(exitLine.FindString(line)) == len(line) {
		return true
	}
	switch line {
	case "<output>", "</output>", "```", "<tool_use_error>", "</tool_use_error>":
		return true
	}
	// OpenHands' exit notes: the status is known from the result already.
	if strings.HasPrefix(line, "[The command completed with exit code") || strings.HasPrefix(line, "[Command finished with exit code") {
		return true
	}
	return strings.Trim(line, "-=*_#|┃─━ ") == ""
}

// weakError reports a line that mentions trouble only as a warning; a
// failure's key line is a real error when there is one.
func weakError(line string) bool {
	l := strings.ToLower(line[:min(len(line), 500)])
	return strings.Contains(l, "warning") && !strings.Contains(l, "error") && !strings.Contains(l, "fail") && !strings.Contains(l, "data race")
}

func mentionsError(line string) bool {
	l := strings.ToLower(line[:min(len(line), 500)])
	for _, w := range []string{"error", "fail", "fatal", "exception", "traceback", "cannot", "not found", "denied", "panic", "undefined", "data race", "warning:"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// todo is one item of a todo list tool's input.
type todo struct {
	Content string `json:"content"`
	Title   string `json:"title"`
	Status  string `json:"status"`
}

// toolInput is what the extractive summarizer reads from a tool call's
// input. Unknown members are skipped without being copied.
type toolInput struct {
	Command      json.RawMessage `json:"command"`
	Cmd          json.RawMessage `json:"cmd"`
	FilePath     string          `json:"file_path"`
	Path         string          `json:"path"`
	NotebookPath string          `json:"notebook_path"`
	Filename     string          `json:"filename"`
	TargetFile   string          `json:"target_file"`
	Pattern      string          `json:"pattern"`
	Query        string          `json:"query"`
	URL          string          `json:"url"`
	Description  string          `json:"description"`
	Prompt       string          `json:"prompt"`
	Todos        []todo          `json:"todos"`     // Claude Code TodoWrite
	TaskList     []todo          `json:"task_list"` // OpenHands task_tracker
	// What an edit changes (Claude Code Edit, OpenHands str_replace_editor).
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	OldStr    string `json:"old_str"`
	NewStr    string `json:"new_str"`

	cmd string // Command or Cmd as a string
}

// parseInput reads a tool call's input as json.Unmarshal into a toolInput
// would (ok false when it fails), without its reflection: a long history's
// summary reads tens of thousands of inputs. An input with a member whose
// name matches a field only as json.Unmarshal folds case is read by
// json.Unmarshal itself.
func parseInput(raw json.RawMessage) (in toolInput, ok bool) {
	return parseInputAs(raw, false)
}

// borrowInput is parseInput whose strings without escapes are raw's own
// bytes, not copies (an Edit's old and new text, a long command): for a
// reader that keeps nothing of them past its call, the extractive
// summary, which reads every call of the history (4.9 MB of commands
// copied for 10,000 calls; issue 24 item 7). The values are
// parseInput's.
func borrowInput(raw json.RawMessage) (in toolInput, ok bool) {
	return parseInputAs(raw, true)
}

func parseInputAs(raw json.RawMessage, borrow bool) (in toolInput, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return toolInput{}, false
	}
	var buf [8]rawjson.Member
	members, err := rawjson.AppendMembers(buf[:0], raw)
	if err != nil {
		return toolInput{}, false
	}
	for _, m := range members {
		if !in.set(m.Key, m.Value, borrow) {
			if !in.folded(m.Key) {
				return toolInput{}, false // a value json.Unmarshal refuses
			}
			var all toolInput // apart, so that in stays on the stack
			if json.Unmarshal(raw, &all) != nil {
				return toolInput{}, false
			}
			in = all
			break
		}
	}
	in.cmd = commandOf(borrow, in.Command, in.Cmd)
	if len(in.Todos) == 0 {
		in.Todos = in.TaskList
	}
	in.TaskList = nil
	in.Command, in.Cmd = nil, nil
	return in, true
}

// set sets the field named key (exactly, as its json tag) to the raw
// value v as json.Unmarshal would; it reports false when the value is not
// one json.Unmarshal takes for the field, or key names no field exactly
// (see folded). Members of no field are passed over.
func (in *toolInput) set(key string, v []byte, borrow bool) bool {
	var dst *string
	switch key {
	case "command":
		in.Command = v
		return true
	case "cmd":
		in.Cmd = v
		return true
	case "todos":
		return unmarshalTodos(&in.Todos, v, borrow)
	case "task_list":
		return unmarshalTodos(&in.TaskList, v, borrow)
	case "file_path":
		dst = &in.FilePath
	case "path":
		dst = &in.Path
	case "notebook_path":
		dst = &in.NotebookPath
	case "filename":
		dst = &in.Filename
	case "target_file":
		dst = &in.TargetFile
	case "pattern":
		dst = &in.Pattern
	case "query":
		dst = &in.Query
	case "url":
		dst = &in.URL
	case "description":
		dst = &in.Description
	case "prompt":
		dst = &in.Prompt
	case "old_string":
		dst = &in.OldString
	case "new_string":
		dst = &in.NewString
	case "old_str":
		dst = &in.OldStr
	case "new_str":
		dst = &in.NewStr
	default:
		return !in.folded(key)
	}
	return setString(dst, v, borrow)
}

// setString sets *dst to the JSON string v as json.Unmarshal sets a
// string field (null leaves it as it was); false for any other value.
// borrow as borrowInput.
func setString(dst *string, v []byte, borrow bool) bool {
	switch rawjson.Kind(v) {
	case '"':
		*dst = unquoteAs(v, borrow)
	case 'n': // null leaves a string as it was
	default:
		return false
	}
	return true
}

// unmarshalTodos decodes v into the list at dst as json.Unmarshal decodes
// a member into a field: into the list there is. Into an empty list, the
// forms clients write are read directly (todosOf); borrow as borrowInput.
func unmarshalTodos(dst *[]todo, v []byte, borrow bool) bool {
	if len(*dst) == 0 && cap(*dst) == 0 {
		if list, ok := todosOf(v, borrow); ok {
			*dst = list
			return true
		}
	}
	list := *dst // a copy, so that the toolInput holding dst stays on the stack
	if json.Unmarshal(v, &list) != nil {
		return false
	}
	*dst = list
	return true
}

// todosOf is json.Unmarshal of v into an empty list of todos, for null and
// arrays of null and objects whose members of a todo's fields (named
// exactly) are strings or null; ok is false for anything else, which
// json.Unmarshal decides (a TodoWrite call carries the whole list, and a
// summary of a long session read thousands through reflection: 8 MB for
// a 10 MB request).
func todosOf(v []byte, borrow bool) (list []todo, ok bool) {
	switch rawjson.Kind(v) {
	case 'n':
		return nil, true
	case '[':
	default:
		return nil, false
	}
	var ebuf [16][]byte
	els, err := rawjson.AppendElements(ebuf[:0], v)
	if err != nil {
		return nil, false
	}
	list = make([]todo, len(els))
	for i, el := range els {
		switch rawjson.Kind(el) {
		case 'n':
			continue
		case '{':
		default:
			return nil, false
		}
		var mbuf [8]rawjson.Member
		ms, err := rawjson.AppendMembers(mbuf[:0], el)
		if err != nil {
			return nil, false
		}
		t := &list[i]
		for _, m := range ms {
			var f *string
			switch m.Key {
			case "content":
				f = &t.Content
			case "title":
				f = &t.Title
			case "status":
				f = &t.Status
			default:
				if strings.EqualFold(m.Key, "content") || strings.EqualFold(m.Key, "title") || strings.EqualFold(m.Key, "status") {
					return nil, false // matched as json.Unmarshal folds case
				}
				continue
			}
			if !setString(f, m.Value, borrow) {
				return nil, false
			}
		}
	}
	return list, true
}

// toolInputKeys are the json names of toolInput's fields, from their tags.
var toolInputKeys = func() []string {
	t := reflect.TypeFor[toolInput]()
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}()

// folded reports whether key names a field of toolInput only as
// json.Unmarshal matches names, ignoring case ("Command", "FILE_PATH").
func (in *toolInput) folded(key string) bool {
	for _, k := range toolInputKeys {
		if key != k && strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// commandOf returns the command of a shell-like call (a string, or an argv
// array joined with spaces); borrow as borrowInput.
func commandOf(borrow bool, raws ...json.RawMessage) string {
	for _, raw := range raws {
		if len(raw) == 0 {
			continue
		}
		if rawjson.Kind(raw) == '"' {
			return unquoteAs(raw, borrow)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var argv []string
		if json.Unmarshal(raw, &argv) == nil {
			return strings.Join(argv, " ")
		}
	}
	return ""
}

// unquoteAs is rawjson.Unquote of the string token v; when borrow is set,
// a string that needs no decoding (no escape, valid UTF-8) is v's own
// bytes.
func unquoteAs(v []byte, borrow bool) string {
	if body := v[1 : len(v)-1]; borrow && bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return borrowed(body)
	}
	return rawjson.Unquote(v)
}

// command returns the command of a shell-like call.
func (in *toolInput) command() string { return in.cmd }

func (in *toolInput) path() string {
	for _, p := range []string{in.FilePath, in.NotebookPath, in.TargetFile, in.Filename, in.Path} {
		if p != "" {
			return p
		}
	}
	return ""
}

// File operation kinds, in the order the summary lists them.
const (
	opRead = iota
	opCreated
	opModified
	opDeleted
	numOps
)

var opNames = [numOps]string{"Read", "Created", "Modified", "Deleted"}

// fileOp is one file operation found in a tool call.
type fileOp struct {
	kind int
	path string
}

// fileOps classifies a successful tool call by its name and input.
// known reports whether the path was seen before (a write to a known file
// is a modification, not a creation).
func fileOps(name string, in *toolInput, known func(string) bool) []fileOp {
	lname := strings.ToLower(name)
	path := in.path()
	cmd := in.command()

	// Editor tools with a sub-command (OpenHands str_replace_editor).
	if path != "" {
		switch cmd {
		case "view":
			return []fileOp{{opRead, path}}
		case "create":
			return []fileOp{{writeKind(path, known), path}}
		case "str_replace", "insert", "undo_edit", "append":
			return []fileOp{{opModified, path}}
		}
	}
	if path != "" {
		switch {
		case hasAny(lname, "grep", "glob", "search", "find", "list", "ls", "tree"):
			return nil
		case hasAny(lname, "delete", "remove", "unlink"):
			return []fileOp{{opDeleted, path}}
		case hasAny(lname, "edit", "replace", "patch", "insert", "update", "apply", "append"):
			return []fileOp{{opModified, path}}
		case hasAny(lname, "write", "create", "save"):
			return []fileOp{{writeKind(path, known), path}}
		case hasAny(lname, "read", "view", "cat", "open", "get", "show"):
			return []fileOp{{opRead, path}}
		}
	}
	if cmd != "" && hasAny(lname, "bash", "shell", "terminal", "exec", "run", "command", "sh") {
		return shellOps(cmd, known)
	}
	return nil
}

func writeKind(path string, known func(string) bool) int {
	if known(path) {
		return opModified
	}
	return opCreated
}

func hasAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// shellOps reads file operations from simple shell commands: rm (deleted),
// touch and output redirections (created or modified), sed -i (modified),
// cat, head, tail, less (read). Anything else is not guessed at.
func shellOps(cmd string, known func(string) bool) []fileOp {
	var ops []fileOp
	for _, seg := range splitShell(cmd) {
		f := strings.Fields(seg)
		if len(f) == 0 {
			continue
		}
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == ">" || f[i] == ">>") && plausiblePath(f[i+1]) {
				kind := writeKind(f[i+1], known)
				if f[i] == ">>" {
					kind = opModified
				}
				ops = append(ops, fileOp{kind, unquote(f[i+1])})
			}
		}
		args := operands(f[1:])
		switch f[0] {
		case "rm", "unlink":
			for _, a := range args {
				ops = append(ops, fileOp{opDeleted, a})
			}
		case "touch":
			for _, a := range args {
				ops = append(ops, fileOp{writeKind(a, known), a})
			}
		case "sed":
			if slicesContains(f[1:], "-i") || hasPrefixAny(f[1:], "-i") {
				if len(args) > 1 {
					ops = append(ops, fileOp{opModified, args[len(args)-1]})
				}
			}
		case "cat", "head", "tail", "less", "more":
			for _, a := range args {
				ops = append(ops, fileOp{opRead, a})
			}
		}
	}
	return ops
}

// splitShell splits a command line at &&, ||, ;, | and new lines.
func splitShell(cmd string) []string {
	var out []string
	start := 0
	for i := 0; i < len(cmd); i++ {
		switch cmd[i] {
		case ';', '|', '\n', '&':
			if cmd[i] == '&' && (i+1 >= len(cmd) || cmd[i+1] != '&') {
				continue
			}
			out = append(out, cmd[start:i])
			if (cmd[i] == '&' || cmd[i] == '|') && i+1 < len(cmd) && cmd[i+1] == cmd[i] {
				i++
			}
			start = i + 1
		}
	}
	return append(out, cmd[start:])
}

// operands returns the arguments that look like paths, up to the first
// redirection.
func operands(args []string) []string {
	var out []string
	for _, a := range args {
		if a == ">" || a == ">>" || a == "<" || strings.HasPrefix(a, "2>") || a == "<<" || strings.HasPrefix(a, "<<") {
			break
		}
		if strings.HasPrefix(a, "-") || !plausiblePath(a) {
			continue
		}
		out = append(out, unquote(a))
	}
	return out
}

func plausiblePath(a string) bool {
	a = unquote(a)
	if a == "" || len(a) > 512 || strings.ContainsAny(a, "$`*?{}()<>&") || a == "/dev/null" || strings.HasPrefix(a, "/dev/") {
		return false
	}
	return true
}

func unquote(a string) string {
	if len(a) >= 2 && (a[0] == '"' || a[0] == '\'') && a[len(a)-1] == a[0] {
		return a[1 : len(a)-1]
	}
	return a
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func hasPrefixAny(s []string, p string) bool {
	for _, x := range s {
		if strings.HasPrefix(x, p) && !strings.HasPrefix(x, "--") {
			return true
		}
	}
	return false
}

// clip returns s on one line, white space collapsed, at most max
// characters (an ellipsis marks a cut); max ≤ 0 means no limit.
func clip(s string, max int) string {
	if c, ok := clipClean(s, max); ok {
		return c
	}
	var b strings.Builder
	if max > 0 {
		b.Grow(min(len(s), max*utf8.UTFMax+1))
	}
	n, space := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = n > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
		if max > 0 && n > max {
			return strings.TrimRight(runePrefix(b.String(), max-1), " ") + "…"
		}
	}
	return b.String()
}

// clipClean is clip of a string clip leaves as it is up to its cut (no
// white space but single spaces between words, valid UTF-8): s itself, or
// its cut, without building it rune by rune (the key line of every call a
// compaction summarizes; 3.3 MB for 10,000 calls). ok is false for any
// other string.
func clipClean(s string, max int) (string, bool) {
	n, space := 0, false
	for i, r := range s {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)) {
			return "", false // an invalid byte, which clip writes as U+FFFD
		}
		if unicode.IsSpace(r) {
			if r != ' ' || n == 0 || space {
				return "", false
			}
			space = true
			n++
			continue
		}
		space = false
		n++
		if max > 0 && n > max {
			return strings.TrimRight(runePrefix(s[:i+size], max-1), " ") + "…", true
		}
	}
	if space {
		return "", false
	}
	return s, true
}

// itoa is strconv.Itoa.
func itoa(n int) string { return strconv.Itoa(n) }
