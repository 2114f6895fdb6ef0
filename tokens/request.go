package tokens

import "github.com/agentctx/agentctx"

// CountRequestExtras counts what a request body sends besides its messages:
// the top-level system prompt (a string or blocks) and the tool
// definitions. A plain list of messages has neither.
//
// The tool definitions are counted in their canonical form, as tool
// inputs are: the JSON of the "tools" member as JSON.stringify writes it
// (no whitespace between tokens, strings with the fewest escapes, member
// order and numbers as written), so the count does not depend on how the
// body was indented or escaped. The provider receives the definitions as
// data and renders them its own way: no layout of the body's encoding
// reaches the model.
func (mc *MessageCounter) CountRequestExtras(doc *agentctx.Document) int {
	n := 0
	if sys, ok := doc.System(); ok {
		n += mc.CountContent(sys)
	}
	if tools, ok := doc.Member("tools"); ok && string(tools) != "null" {
		n += mc.CountText(canonicalJSON(tools))
	}
	return n
}

// CountRequest counts a request as it is sent: its messages, its system
// prompt and its tool definitions.
func (mc *MessageCounter) CountRequest(doc *agentctx.Document) int {
	return mc.Count(doc.Messages) + mc.CountRequestExtras(doc)
}
