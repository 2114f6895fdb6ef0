package pipeline

import (
	"slices"
	"strings"

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

// logTerminal tells the user which tools the session treats as terminal
// output (issue 47: nothing said that Cline's shell tool was not one):
// one Info line at the session's first request with the tools known by
// name and how others are recognized, and one the first time a tool
// outside that list counts by the shape of its output (found.ByContent),
// which the session state remembers (state.TerminalTools) so that each is
// told once per session. A Stateless Pipeline tells the list once.
func (c *call) logTerminal(found prune.Result) {
	p := c.p
	if c.st.Requests == 0 && p.terminalLogged.CompareAndSwap(false, true) {
		p.log.Info("pipeline: terminal tools: stale output of these tools is cleared",
			"session", p.sessionID, "tools", strings.Join(p.terminalNames(), ","),
			"also", "results shaped like a shell transcript, of any tool")
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
		p.log.Info("pipeline: treating a tool as terminal: its output is shaped like a shell transcript",
			"session", p.sessionID, "tool", name)
	}
}
