package proxy

import (
	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/lib/respitems"
)

// ResponsesMessages maps the items of a Responses "input" array onto
// chat-shaped messages, the shape the Engine works on, and returns for each
// message the indices of the items it stands for:
//
//   - a message item ({"type":"message"} or any item with a role) is a
//     message of that role, its input_text/output_text parts as text
//     blocks; role "developer" becomes "system";
//   - consecutive calls (function_call, custom_tool_call, local_shell_call,
//     and any other item that is not an output), with the reasoning items
//     among them, are one assistant message whose tool_calls are the calls;
//   - an output (function_call_output, custom_tool_call_output, any type
//     ending in "_output") is a role "tool" message answering its call_id,
//     its output as content.
//
// The mapping is for the Engine only: messages the Engine keeps go
// upstream as their original items, byte for byte. It is the SDK
// middleware's (openaix) too: both use internal/lib/respitems.
func ResponsesMessages(items [][]byte) ([]agentctx.Message, [][]int, error) {
	return respitems.Messages(items)
}

// responseItem is what one input item maps to.
type responseItem = respitems.Item

const (
	itemMessage = respitems.KindMessage // a message of its own
	itemOutput  = respitems.KindOutput  // a tool message of its own
)

// parseResponseItem reads one input item (splitting it once).
func parseResponseItem(raw []byte) (*responseItem, error) { return respitems.Parse(raw) }

// groupResponseItems maps items onto messages (see ResponsesMessages):
// the messages and the items of each.
func groupResponseItems(its []*responseItem) ([]agentctx.Message, [][]int) {
	return respitems.Group(its)
}

// spliceResponses is the span that writes, in place of a Responses body's
// "input" array (list), the array for the messages to send: the original
// items of every message the Engine kept; for a tool result whose content
// changed, its original item with only "output" replaced; new messages (a
// summary, a provider's compacted window) as message items
// (respitems.SpliceParts): the parts of the body in its place, the items
// kept read in place in body.
func spliceResponses(body, list []byte, items [][]byte, in []agentctx.Message, groups [][]int, a *alignment) span {
	return span{value: list, parts: respitems.SpliceParts(body, items, in, groups, a.out, a.match)}
}

func messageText(m *agentctx.Message) string { return respitems.Text(m) }
