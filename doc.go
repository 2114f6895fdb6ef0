// Package agentctx keeps an LLM agent's conversation inside its context
// window without losing anything.
//
// The root package holds the message model every other part works on; the
// parts live in their own packages:
//
//   - tokens: exact o200k_base / cl100k_base token counting, vocabularies
//     embedded;
//   - offload: moves large tool results to files and leaves a reference;
//   - prune: replaces stale terminal output in the view sent to the model;
//   - workspace: stores each tool result whole as an artifact and reads it
//     back by id, line range, grep or metadata;
//   - compact: summarizes the middle of a long history and archives the
//     originals;
//   - pipeline: all of the above in one call before every model request.
//
// The command agentctx (cmd/agentctx) is a thin layer over these packages.
//
// # Messages
//
// A [Message] holds either wire shape agents use: Anthropic messages
// ({role, content: string | blocks} with tool_use and tool_result blocks) and
// OpenAI chat messages (assistant tool_calls, role "tool" results with a
// tool_call_id). System messages may be in the list. Decoding is lossless:
// every member is kept, in order, including unknown members, unknown block
// types, metadata such as timestamp and messageStatus, and tool_use input
// bytes as given; encoding an unchanged message gives back its input bytes
// (whitespace between tokens aside).
//
//	doc, err := agentctx.ReadFile(ctx, "session.jsonl", os.Stdin)
//	if err != nil {
//		return err // an *InputError names the line and column
//	}
//	for r := range agentctx.ToolResults(doc.Messages) {
//		fmt.Println(r.ID, r.Content.Chars())
//	}
//
// [ReadDocument] detects the shape of its input from its content ([Formats]
// lists them with an example each): a JSON array of messages; a JSON object
// with "messages" (an API request body or a mini-swe-agent trajectory; the
// other members, such as a top-level system, are kept); a SWE-agent
// trajectory, whose "history" holds the messages; JSON Lines of messages;
// or a Claude Code session (assistant records that share a message id
// become one message, and the tool results written between them are
// gathered into the next message; a subagent's sidechain file is a
// conversation of its own; a compacted session is read from its last
// compact boundary on unless [ReadOptions].WholeHistory is set).
// [Document.Encode] writes the document back in the same shape. OpenHands
// evaluation output (output.jsonl, whose records hold events rather than
// messages) is imported as OpenAI chat messages, one conversation per
// record ([Document.Conversations]), and written back as JSON Lines of
// messages.
//
// A reader never reads a document short in silence: [Document.Notice] says
// when it holds no message, which records were skipped (counted by kind in
// [Document].SkippedKinds), which messages are kept in the file but are
// not model messages (mini-swe-agent's role "exit", [Document.NonModel]),
// and where Claude Code compacted ([Document].Boundaries).
//
// # Tool results
//
// A tool result is a tool_result block or a whole role "tool" message;
// [ToolResults] yields both alike, and [MapToolResults] replaces their
// content copy-on-write: the input list is never modified, changed messages
// are copies, unchanged ones are shared. Every part of agentctx works this
// way, so a caller's stored history stays intact.
//
// # Characters
//
// Thresholds in characters count Unicode code points of a string content; a
// block array counts as its compact JSON written the way JavaScript's
// JSON.stringify writes it (no HTML escaping): see [Content.Chars] and
// [Content.AsText].
//
// # Tool pairing
//
// Model APIs reject a history in which a tool call is not answered in the
// next message, or a result answers no call (HTTP 400). [ValidatePairing]
// reports every such issue for both wire shapes, including parallel calls
// and thinking blocks; [RepairPairing] adds a synthetic error result for an
// unanswered call and drops an orphan result. Pairing is per turn: a call
// is answered in the message(s) right after it, so a model that reuses an
// id in several turns pairs up ([ToolResult].Turn tells which call a result
// answers). No part of agentctx turns a paired history into an unpaired
// one.
//
// # Errors
//
// Malformed input returns an [*InputError] (errors.Is(err,
// [ErrInvalidInput])); an unpaired history, where a part requires a paired
// one, returns a [*PairingError] (errors.Is(err, [ErrUnpaired])).
package agentctx
