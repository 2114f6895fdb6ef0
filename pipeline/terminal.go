package pipeline

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/prune"
)

// terminalNames returns the tool names the prune step treats as terminal
// output by name: Options.Prune.ToolNames, or prune's defaults.
func (p *Pipeline) terminalNames() []string {
	if names := p.opts.Prune.ToolNames; names != nil {
		return names
	}
	return prune.DefaultToolNames()
}

// byMarks and byShape make the "also" attribute of the terminal tools'
// log line: how results of tools outside the list are recognized.
const (
	byMarks = "results with stdout, stderr or exitCode members or an agent harness's exit status line, of any tool"
	byShape = "results shaped like a shell transcript, of any tool"
)

// logTerminal tells the user which tools the session treats as terminal
// output (issue 47: nothing said that Cline's shell tool was not one):
// one Info line at the session's first request with the tools known by
// name (tools), those of them the request declares (declared, when the
// caller gives its tool declarations: CallOptions.Tools) and how others
// are recognized (also); and one the first time a tool outside the list
// counts by its output (found.ByContent), which the session state
// remembers (state.TerminalTools) so that each is told once per session.
// A Stateless Pipeline tells the list once.
func (c *call) logTerminal(found prune.Result) {
	p := c.p
	if c.st.Requests == 0 && p.terminalLogged.CompareAndSwap(false, true) {
		names := p.terminalNames()
		attrs := []any{"session", p.sessionID, "tools", strings.Join(names, ",")}
		if declared, ok := declaredTools(c.co.Tools); ok {
			var terminal []string
			for _, d := range declared {
				if slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, d) }) {
					terminal = append(terminal, d)
				}
			}
			list := strings.Join(terminal, ",")
			if list == "" {
				list = "none"
			}
			attrs = append(attrs, "declared", list)
		}
		also := byMarks
		if p.opts.Prune.ByShape {
			also = byMarks + "; " + byShape
		}
		p.log.Info("pipeline: terminal tools: stale output of these tools is cleared", append(attrs, "also", also)...)
	}
	var learned []string
	for _, name := range found.ByContent {
		if !slices.Contains(c.st.TerminalTools, name) {
			learned = append(learned, name)
		}
	}
	if len(learned) == 0 {
		return
	}
	// A new slice: the state before this call shares the old one.
	c.st.TerminalTools = slices.Concat(c.st.TerminalTools, learned)
	for _, name := range learned {
		p.log.Info("pipeline: treating a tool as terminal: its output reads as command output",
			"session", p.sessionID, "tool", name)
	}
}

// declaredTools returns the names of the tools a request's "tools" member
// declares, in order: an element's "name" (Anthropic, Responses), its
// "function"'s (Chat Completions), or its "type" for a built-in tool that
// has no name (Responses' "local_shell"). ok is false when raw is not a
// list (absent, null, or not one the request can have sent).
func declaredTools(raw json.RawMessage) (names []string, ok bool) {
	if rawjson.Kind(raw) != '[' {
		return nil, false
	}
	var list []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	for _, d := range list {
		switch {
		case d.Function != nil && d.Function.Name != "":
			names = append(names, d.Function.Name)
		case d.Name != "":
			names = append(names, d.Name)
		case d.Type != "":
			names = append(names, d.Type)
		}
	}
	return names, true
}
