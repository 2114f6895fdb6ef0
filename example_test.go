package agentctx_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
)

// Read a conversation in any supported shape, look at its tool results and
// check that every tool call is answered.
func Example() {
	const history = `[
	  {"role":"user","content":"How many Go files?"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls *.go | wc -l"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"12"}]},
	  {"role":"assistant","content":"There are 12."}
	]`
	doc, err := agentctx.ReadDocument(context.Background(), strings.NewReader(history))
	if err != nil {
		fmt.Println(err)
		return
	}
	names := agentctx.ToolNames(doc.Messages)
	for r := range agentctx.ToolResults(doc.Messages) {
		fmt.Printf("message %d: %s -> %q (%d chars)\n", r.Message, names[r.ID], r.Content.Text(), r.Content.Chars())
	}
	fmt.Println("paired:", agentctx.ValidatePairing(doc.Messages).Valid)
	// Output:
	// message 2: bash -> "12" (2 chars)
	// paired: true
}

// Replace tool results without touching the stored history: the result is
// a new list, and the document is written back in its own shape with every
// other byte as it was.
func ExampleMapToolResults() {
	doc, _ := agentctx.ParseDocument(context.Background(), []byte(
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"cat","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a very long file"}]}`))
	short := agentctx.MapToolResults(doc.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		return agentctx.Text("[elided]"), r.Content.Chars() > 10
	})
	doc.WithMessages(short).Encode(os.Stdout)
	doc.Encode(os.Stdout)
	// Output:
	// {"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"cat","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"[elided]"}]}
	// {"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"cat","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a very long file"}]}
}

// Repair a history whose last tool call was never answered, so a model API
// accepts it.
func ExampleRepairPairing() {
	msgs, _ := agentctx.UnmarshalMessages([]byte(`[
	  {"role":"user","content":"run it"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"bash","input":{"command":"make"}}]}
	]`))
	fmt.Println(agentctx.ValidatePairing(msgs).Issues[0].Kind)
	fixed, repairs := agentctx.RepairPairing(msgs)
	b, _ := agentctx.MarshalMessages(fixed[2:])
	fmt.Println(repairs[0].Action, string(b))
	// Output:
	// unanswered_call
	// added_result [{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"Error: no result was recorded for this tool call.","is_error":true}]}]
}

// A document never reads short in silence: Notice says what the reader
// kept out of Messages, so a caller can tell the user (agentctx prints it
// on stderr). Agent transcripts are read by package transcript, whose
// Notice also counts the records it skipped.
func ExampleDocument_Notice() {
	doc, err := agentctx.ParseDocument(context.Background(), []byte(`[{"role":"user","content":"Fix the bug."},{"role":"assistant","content":"Fixed."},{"role":"exit","content":""}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.Format, len(doc.Messages), "messages")
	fmt.Println(doc.Notice())
	// Output:
	// json 2 messages
	// 1 message with role "exit" kept in the file, not sent to the model
}
