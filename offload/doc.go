// Package offload moves large tool results out of an agent's conversation
// into files and leaves a short reference in their place, so the context
// window is freed and nothing is lost.
//
// It offers two operations, one per requirement document:
//
//   - [Batch] walks a whole message list and offloads every tool result of
//     at least 100 characters to <dir>/tool-result-<id>.md, replacing its
//     content with "[Content offloaded to: ./tool-result-<id>.md]".
//   - [Message] offloads every tool result of one message (the caller has
//     decided it is too large) to <dir>/<session>/<id>.md, replacing its
//     content with "[Tool result offloaded to file: <absolute path>]".
//
// Both treat an Anthropic tool_result block and an OpenAI role "tool"
// message alike, never modify their input, and always leave string content
// behind: block arrays are written (and measured) as their compact JSON.
//
// # Batch offload
//
//	res, err := offload.Batch(ctx, msgs, offload.BatchOptions{Dir: ".offload"})
//	if err != nil {
//		return err
//	}
//	msgs = res.Messages // send these; res.Files lists what was written
//
// Characters are Unicode code points (see [agentctx.Content.Chars]): 99 are
// kept, 100 are offloaded, an empty result is always kept. The statistics
// are OffloadedCount, FreedChars (the sum of the original characters) and
// Files (absolute paths, in order). Content that already is an offload
// reference (see [IsReference]) is never offloaded again.
//
// Two results with the same id in one call go to tool-result-<id>.md,
// tool-result-<id>-1.md, tool-result-<id>-2.md, and so on. A file left by an
// earlier call is never overwritten: when it holds the same content it is
// reused, otherwise the next free suffix is taken. Running Batch twice on the
// same history therefore gives the same references and writes nothing new,
// and concurrent calls on one directory never lose each other's files.
//
// # Single-message offload
//
//	res, err := offload.Message(ctx, msg, offload.MessageOptions{
//		Dir:       ".offload",
//		SessionID: "session-abc123",
//	})
//
// FreedChars is the original characters minus the placeholder's (it is
// negative for content shorter than the placeholder: Message does not
// check sizes). A result whose id was already offloaded in the session is
// overwritten. Files are written by a [FileWriter]; the default,
// [OSWriter], writes to the local disk. Inject another one to store files
// elsewhere or to test failures. [MessageToDir] is the short form with the
// default writer.
//
// # Safety
//
// Ids and session ids become file names through a reversible encoding that
// can never leave the directory: "/", "\", a leading ".", NUL, control
// characters and every byte outside [A-Za-z0-9._-] are written as %XX, so
// "../../etc/passwd" becomes "%2E.%2F..%2Fetc%2Fpasswd" and two different
// ids never share a name. Ids that are already safe (toolu_01abc,
// call_xyz) are used as they are. An empty id or session id is an error
// that matches [ErrEmptyID] or [ErrEmptySessionID] and
// [agentctx.ErrInvalidInput]; input errors are found before anything is
// written.
//
// Every file is written to a temporary file in the same directory and then
// renamed (or linked) into place, so a reader or a crash never sees a
// partial file. Set Sync in the options to fsync each file as well.
package offload
