package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/base/textfmt"
)

// Names of the agent tools (seed 003), as Tools defines them and Execute
// runs them.
const (
	ToolGetKnowledgeByID         = "get_knowledge_by_id"
	ToolGetKnowledgeByLines      = "get_knowledge_by_lines"
	ToolGrepKnowledge            = "grep_knowledge"
	ToolGrepSessionKnowledge     = "grep_session_knowledge"
	ToolQueryArtifacts           = "query_artifacts"
	ToolGetToolResultOffloadInfo = "get_tool_result_offload_info"
)

// ToolDefinition is one agent tool: a name, a description for the model,
// and a JSON Schema of its arguments. Marshaled as JSON it is an entry of
// the Anthropic Messages API's "tools" ({name, description, input_schema});
// OpenAI returns the Chat Completions shape.
type ToolDefinition struct {
	Name        string          `json:"name"`         // the tool's name (get_knowledge_by_id, grep_knowledge, ...)
	Description string          `json:"description"`  // what it does, for the model
	InputSchema json.RawMessage `json:"input_schema"` // the JSON Schema of its arguments
}

// OpenAITool is a tool in the OpenAI Chat Completions shape.
type OpenAITool struct {
	Type     string         `json:"type"`     // "function"
	Function OpenAIFunction `json:"function"` // the tool
}

// OpenAIFunction is the function of an OpenAITool.
type OpenAIFunction struct {
	Name        string          `json:"name"`        // the tool's name, as in ToolDefinition
	Description string          `json:"description"` // what it does, for the model
	Parameters  json.RawMessage `json:"parameters"`  // the JSON Schema of its arguments
}

// OpenAI returns the definition in the OpenAI Chat Completions shape
// ({type: "function", function: {name, description, parameters}}).
func (d ToolDefinition) OpenAI() OpenAITool {
	return OpenAITool{Type: "function", Function: OpenAIFunction{Name: d.Name, Description: d.Description, Parameters: d.InputSchema}}
}

// Tools returns the definitions of the read tools with the default read
// cap. Workspace.Tools states the workspace's own cap.
func Tools() []ToolDefinition { return tools(DefaultMaxChars, DefaultMaxResults) }

// Tools returns the definitions of the read tools, ready to hand to a model
// API; Execute runs a call of any of them.
func (w *Workspace) Tools() []ToolDefinition { return tools(w.opts.MaxChars, w.opts.MaxResults) }

// OpenAITools returns Tools in the OpenAI Chat Completions shape.
func (w *Workspace) OpenAITools() []OpenAITool {
	defs := w.Tools()
	out := make([]OpenAITool, len(defs))
	for i, d := range defs {
		out[i] = d.OpenAI()
	}
	return out
}

func tools(maxChars, maxResults int) []ToolDefinition {
	capNote := "Output is cut at " + textfmt.Thousands(maxChars) + " characters, with a notice that tells how to read on."
	if maxChars < 0 {
		capNote = ""
	}
	artifactID := `"artifact_id": {"type": "string", "minLength": 1, "description": "Artifact id, as named in a <knowledge_list> entry: tool_result_<tool_call_id>."}`
	grepProps := `"pattern": {"type": "string", "minLength": 1, "description": "RE2 regular expression (Go/re2 syntax: no lookaround or backreferences), matched against each line."},
		"ignore_case": {"type": "boolean", "description": "Match letters in any case. Default false."},
		"context_lines": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "Lines to show before and after each match. Default 0."},
		"max_results": {"type": "integer", "minimum": 1, "description": "Most matching lines to show. Default ` + strconv.Itoa(maxResults) + `."}`
	schema := func(props string, required ...string) json.RawMessage {
		req, _ := json.Marshal(append([]string{}, required...))
		var b bytes.Buffer
		raw := `{"type": "object", "properties": {` + props + `}, "required": ` + string(req) + `, "additionalProperties": false}`
		if err := json.Compact(&b, []byte(raw)); err != nil {
			panic("workspace: bad tool schema: " + err.Error()) // a bug in this file, caught by its tests
		}
		return b.Bytes()
	}
	join := func(s ...string) string { return strings.TrimSpace(strings.Join(s, " ")) }
	return []ToolDefinition{
		{
			Name: ToolGetKnowledgeByID,
			Description: join("Read a stored (offloaded) tool result whole by its artifact id.",
				"Large tool results are replaced in the conversation by a <knowledge_list> entry naming their artifact; this returns the original content.",
				capNote, "Pass offset (in characters) to continue after a cut."),
			InputSchema: schema(artifactID+`,
				"offset": {"type": "integer", "minimum": 0, "description": "Characters to skip from the start. Default 0."}`, "artifact_id"),
		},
		{
			Name: ToolGetKnowledgeByLines,
			Description: join("Read lines start_line to end_line (1-based, inclusive) of a stored tool result.",
				"An end_line past the last line is clamped. The output starts with a header \"Lines a-b of N\" and gives the lines as stored.", capNote),
			InputSchema: schema(artifactID+`,
				"start_line": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based."},
				"end_line": {"type": "integer", "minimum": 1, "description": "Last line to read, inclusive."}`, "artifact_id", "start_line", "end_line"),
		},
		{
			Name: ToolGrepKnowledge,
			Description: join("Search the lines of a stored tool result with a regular expression, like grep -n.",
				"Each matching line is shown as \"N:line\", context lines as \"N-line\", and \"--\" separates groups.", capNote),
			InputSchema: schema(artifactID+`, `+grepProps, "artifact_id", "pattern"),
		},
		{
			Name: ToolGrepSessionKnowledge,
			Description: join("Search every stored tool result of the session (of every session when there is no current one) with a regular expression, like grep -n over many files.",
				"Lines are shown as \"ARTIFACT_ID:N:line\" (match) and \"ARTIFACT_ID-N-line\" (context).", capNote),
			InputSchema: schema(grepProps+`,
				"session_id": {"type": "string", "description": "Session to search. Default: the current session, or every session when there is none."},
				"task_id": {"type": "string", "description": "Only tool results of this task."}`, "pattern"),
		},
		{
			Name: ToolQueryArtifacts,
			Description: join("List stored artifacts whose metadata matches every key of filter exactly",
				"(keys: context_type, biz_id (the tool call id), task_id, session_id, agent_id, tool_name, action_name).",
				"Returns a JSON array of {id, type, created_at, chars, lines, metadata}, oldest first.", capNote),
			InputSchema: schema(`"filter": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Metadata to match, e.g. {\"context_type\": \"tool_result\", \"session_id\": \"...\"}. Without session_id: the current session's artifacts, or every session's when there is none."},
				"limit": {"type": "integer", "minimum": 1, "description": "Most artifacts to list."},
				"offset": {"type": "integer", "minimum": 0, "description": "Artifacts to skip."}`),
		},
		{
			Name: ToolGetToolResultOffloadInfo,
			Description: join("List the tool results stored in this workspace: artifact_id, biz_id (the tool call id), tool_name, action_name, size in characters and lines.",
				"Read one with get_knowledge_by_id, get_knowledge_by_lines or grep_knowledge.", capNote),
			InputSchema: schema(`"task_id": {"type": "string", "description": "Only tool results of this task."},
				"session_id": {"type": "string", "description": "Only tool results of this session. Default: the current session, or every session when there is none."}`),
		},
	}
}

// Execute runs a call of one of the Tools with its arguments (a JSON
// object; a JSON string holding one, as some models send, is accepted too)
// and returns the text to give back to the model as the tool result.
//
// On failure the text is a one-line "Error: ..." message written for the
// model (what was wrong and how to call the tool correctly), and err
// reports the failure to the caller, who should then mark the result as an
// error (is_error): it wraps ErrInvalidArguments for arguments that do not
// fit the schema, ErrUnknownTool for a name that is not one of Tools (so a
// loop can dispatch the call elsewhere), or the store's error (ErrNotFound,
// ErrInvalidRange, ErrInvalidPattern, a context error, ...). Execute never
// panics, whatever the arguments.
func (w *Workspace) Execute(ctx context.Context, name string, args json.RawMessage) (string, error) {
	text, err := w.execute(ctx, name, args)
	if err != nil {
		return modelError(name, err), err
	}
	return text, nil
}

func (w *Workspace) execute(ctx context.Context, name string, raw json.RawMessage) (string, error) {
	var allowed []string
	switch name {
	case ToolGetKnowledgeByID:
		allowed = []string{"artifact_id", "offset"}
	case ToolGetKnowledgeByLines:
		allowed = []string{"artifact_id", "start_line", "end_line"}
	case ToolGrepKnowledge:
		allowed = []string{"artifact_id", "pattern", "ignore_case", "context_lines", "max_results"}
	case ToolGrepSessionKnowledge:
		allowed = []string{"pattern", "ignore_case", "context_lines", "max_results", "session_id", "task_id"}
	case ToolQueryArtifacts:
		allowed = []string{"filter", "limit", "offset"}
	case ToolGetToolResultOffloadInfo:
		allowed = []string{"task_id", "session_id"}
	default:
		return "", fmt.Errorf("%w %q: the workspace tools are %s", ErrUnknownTool, name, strings.Join(toolNames(), ", "))
	}
	a, err := parseArgs(raw, allowed)
	if err != nil {
		return "", err
	}
	switch name {
	case ToolGetKnowledgeByID:
		id, offset := a.str("artifact_id", true), a.int("offset", false, 0, 0)
		if a.err != nil {
			return "", a.err
		}
		return w.GetKnowledgeByID(ctx, id, offset)
	case ToolGetKnowledgeByLines:
		id, start, end := a.str("artifact_id", true), a.int("start_line", true, 1, 0), a.int("end_line", true, 1, 0)
		if a.err != nil {
			return "", a.err
		}
		return w.GetKnowledgeByLines(ctx, id, start, end)
	case ToolGrepKnowledge:
		id, pattern, o := a.str("artifact_id", true), a.str("pattern", true), a.grepOptions()
		if a.err != nil {
			return "", a.err
		}
		return w.GrepKnowledge(ctx, id, pattern, o)
	case ToolGrepSessionKnowledge:
		pattern, o := a.str("pattern", true), SessionGrepOptions{GrepOptions: a.grepOptions()}
		o.SessionID, o.TaskID = a.str("session_id", false), a.str("task_id", false)
		if a.err != nil {
			return "", a.err
		}
		return w.GrepSession(ctx, pattern, o)
	case ToolQueryArtifacts:
		f := Filter{Metadata: a.strMap("filter"), Limit: a.int("limit", false, 1, 0), Offset: a.int("offset", false, 0, 0)}
		if a.err != nil {
			return "", a.err
		}
		return w.QueryArtifacts(ctx, f)
	default: // ToolGetToolResultOffloadInfo
		task, session := a.str("task_id", false), a.str("session_id", false)
		if a.err != nil {
			return "", a.err
		}
		return w.ToolResultOffloadInfo(ctx, task, session)
	}
}

func toolNames() []string {
	return []string{ToolGetKnowledgeByID, ToolGetKnowledgeByLines, ToolGrepKnowledge, ToolGrepSessionKnowledge,
		ToolQueryArtifacts, ToolGetToolResultOffloadInfo}
}

// modelError writes an error as one line for the model.
func modelError(tool string, err error) string {
	msg := err.Error()
	var we *Error
	if errors.As(err, &we) {
		msg = we.Err.Error()
		if errors.Is(err, ErrNotFound) {
			msg = fmt.Sprintf("no artifact %s in this workspace (namespace %s); get_tool_result_offload_info lists the stored tool results", quote(we.ID), quote(we.Namespace))
		}
	}
	return "Error: " + tool + ": " + strings.Join(strings.Fields(msg), " ")
}

// args reads tool arguments; the first problem is kept in err.
type args struct {
	m   map[string]json.RawMessage
	err error
}

func parseArgs(raw json.RawMessage, allowed []string) (*args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var inner string
		if json.Unmarshal(raw, &inner) == nil {
			raw = bytes.TrimSpace([]byte(inner))
		}
	}
	a := &args{m: map[string]json.RawMessage{}}
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	if raw[0] != '{' || json.Unmarshal(raw, &a.m) != nil {
		return nil, fmt.Errorf("%w: arguments must be a JSON object with the keys %s", ErrInvalidArguments, strings.Join(allowed, ", "))
	}
	for k := range a.m {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("%w: unknown argument %q; the arguments are %s", ErrInvalidArguments, k, strings.Join(allowed, ", "))
		}
	}
	return a, nil
}

func (a *args) fail(format string, v ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidArguments}, v...)...)
	}
}

// present returns the raw value of an argument; null counts as absent.
func (a *args) present(name string, required bool) (json.RawMessage, bool) {
	v, ok := a.m[name]
	if !ok || string(v) == "null" {
		if required {
			a.fail("%s is required", name)
		}
		return nil, false
	}
	return v, true
}

func (a *args) str(name string, required bool) string {
	v, ok := a.present(name, required)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		a.fail("%s must be a string, got %s", name, short(v))
		return ""
	}
	if required && s == "" {
		a.fail("%s must not be empty", name)
	}
	return s
}

// int reads an integer argument (a JSON number without a fraction, or a
// string holding one) of at least lo; def when absent.
func (a *args) int(name string, required bool, lo, def int) int {
	v, ok := a.present(name, required)
	if !ok {
		return def
	}
	text := string(v)
	var s string
	if json.Unmarshal(v, &s) == nil {
		text = strings.TrimSpace(s)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		a.fail("%s must be an integer, got %s", name, short(v))
		return def
	}
	n := int(f)
	if n < lo {
		a.fail("%s must be at least %d, got %d", name, lo, n)
		return def
	}
	return n
}

func (a *args) bool(name string) bool {
	v, ok := a.present(name, false)
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		var s string
		if json.Unmarshal(v, &s) == nil && (s == "true" || s == "false") {
			return s == "true"
		}
		a.fail("%s must be true or false, got %s", name, short(v))
	}
	return b
}

func (a *args) strMap(name string) Metadata {
	v, ok := a.present(name, false)
	if !ok {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(v, &m) != nil {
		a.fail("%s must be an object of strings, got %s", name, short(v))
		return nil
	}
	md := Metadata{}
	for k, x := range m {
		switch x := x.(type) {
		case string:
			md[k] = x
		case float64, bool:
			md[k] = fmt.Sprint(x)
		default:
			a.fail("%s.%s must be a string", name, k)
			return nil
		}
	}
	return md
}

func (a *args) grepOptions() GrepOptions {
	return GrepOptions{
		IgnoreCase: a.bool("ignore_case"),
		Context:    a.int("context_lines", false, 0, 0),
		MaxResults: a.int("max_results", false, 1, 0),
	}
}

func short(v json.RawMessage) string {
	s := string(v)
	if utf8.RuneCountInString(s) > 40 {
		s = cut(s, 41)
	}
	return s
}
