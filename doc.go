// Package agentctx keeps an LLM agent's conversation inside its context
// window without losing anything.
//
// The root package holds the message model every other part works on, and
// reads and writes the request formats (a JSON array of messages, an API
// request body, JSON Lines of messages). The parts live in their own
// packages:
//
//   - transcript: agent transcripts (Claude Code sessions, OpenHands
//     output, SWE-agent and mini-swe-agent trajectories) read into a
//     Document and written back whole;
//   - tokens: exact o200k_base / cl100k_base token counting, vocabularies
//     embedded; tokens/anthropic: exact Claude counts from Anthropic's
//     count_tokens endpoint;
//   - offload: moves large tool results to files and leaves a reference;
//   - prune: replaces stale terminal output in the view sent to the model;
//   - workspace: stores each tool result whole as an artifact and reads it
//     back by id, line range, grep or metadata; its stores are
//     workspace/dirstore (the default, a directory), workspace/memstore,
//     workspace/sqlitestore and workspace/pgstore, checked by
//     workspace/storetest;
//   - compact: summarizes the middle of a long history and archives the
//     originals; compact/anthropicsum and compact/openaisum summarize with
//     a model, compact/summaryeval scores summaries;
//   - session: per-session state with compare-and-swap over a driver;
//     its stores are session/memsession, session/dirsession,
//     session/sqlitesession and session/pgsession, checked by
//     session/sessiontest;
//   - stores: the default stores in one place (a directory workspace,
//     and the session state kept where the workspace is);
//   - pipeline: all of the above in one call before every model request
//     (the session engine); pipeline/eval runs it over a directory of
//     transcripts, pipeline/replay replays a recorded session through it;
//   - pricing: model prices and a prompt-cache simulator for bills;
//   - proxy: an HTTP proxy for the Anthropic and OpenAI APIs over the
//     session engine; proxy/enginetest: conformance rules for any
//     proxy.Engine;
//   - anthropicx, openaix: middleware for the official Anthropic and
//     OpenAI Go SDKs;
//   - mcpserver: the read-back tools over MCP;
//   - launch: runs an agent client (Claude Code, Codex) through the proxy.
//
// The command agentctx (cmd/agentctx) is a thin layer over these packages
// (internal/app/cli).
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
//	doc, err := transcript.ReadFile(ctx, "session.jsonl", os.Stdin)
//	if err != nil {
//		return err // an *InputError names the line and column
//	}
//	for r := range agentctx.ToolResults(doc.Messages) {
//		fmt.Println(r.ID, r.Content.Chars())
//	}
//
// [ReadDocument] detects the shape of its input from its content ([Formats]
// lists them with an example each): a JSON array of messages; a JSON object
// with "messages" (an API request body; the other members, such as a
// top-level system, are kept); or JSON Lines of messages.
// [Document.Encode] writes the document back in the same shape. Agent
// transcripts are read by package transcript into the same [Document]
// (transcript.ReadDocument reads the request formats too): a Claude Code
// session, an OpenHands evaluation output (one conversation per record,
// [Document.Conversations]), a SWE-agent or mini-swe-agent trajectory. Here
// a Claude Code session, an OpenHands output or a SWE-agent trajectory is
// an [*InputError] that says so (a mini-swe-agent trajectory, an object
// with "messages", reads as a request body): the proxy and the SDK
// middleware, which read request bodies, never take an agent's file for
// one.
//
// A reader never reads a document short in silence: [Document.Notice] says
// when it holds no message, which records were skipped (counted by kind in
// [Document].SkippedKinds), which messages are kept in the file but are
// not model messages (a role "exit", [Document.NonModel]), and where
// Claude Code compacted ([Document].Boundaries).
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
// unanswered call and drops an orphan result (one that was all its message
// held stays as text, so that no turn is lost). Pairing is per turn: a call
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
