package tokens

import "github.com/agentctx/agentctx"

// CountRequestExtras counts what a request body sends besides its messages:
// the top-level system prompt (a string or blocks) and the tool
// definitions (the JSON of its "tools" member). A plain list of messages
// has neither.
func (mc *MessageCounter) CountRequestExtras(doc *agentctx.Document) int {
	n := 0
	if sys, ok := doc.System(); ok {
		n += mc.CountContent(sys)
	}
	if tools, ok := doc.Member("tools"); ok && string(tools) != "null" {
		n += mc.CountText(string(tools))
	}
	return n
}

// CountRequest counts a request as it is sent: its messages, its system
// prompt and its tool definitions.
func (mc *MessageCounter) CountRequest(doc *agentctx.Document) int {
	return mc.Count(doc.Messages) + mc.CountRequestExtras(doc)
}
