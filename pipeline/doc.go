// Package pipeline is the one call an agent loop makes before every model
// request (SPEC §7): it takes the stored history of a conversation and
// returns the list to send, inside the context window, with nothing lost.
//
// # Quick start
//
//	p, err := pipeline.New(pipeline.Options{SessionID: "s1"})
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	for {
//		res, err := p.Prepare(ctx, history) // history is never modified
//		if err != nil {
//			return err
//		}
//		reply := callModel(ctx, res.Messages) // send what Prepare returned
//		history = append(history, reply)
//		if !hasToolCalls(reply) {
//			break
//		}
//		history = append(history, runTools(reply)) // the results, in one message
//	}
//
// The zero Options are the embedded defaults: no API key, no server, no
// download. Tool results are stored in a directory workspace under
// .agentctx, tokens are counted with o200k_base, and compaction uses the
// offline extractive summarizer, archiving what it summarizes in the same
// workspace (artifact compact_<hash>).
//
// # Steps
//
// Prepare runs six steps and reports each (Report.Steps):
//
//  1. repair: tool calls without a result get a synthetic error result and
//     results without a call are dropped, so the request is never rejected
//     for its pairing (agentctx.RepairPairing).
//  2. prune: successful terminal output older than 15 minutes and not among
//     the 5 most recent results becomes "此命令返回内容已过时" (package prune,
//     seed 004).
//  3. offload: every tool result is stored whole as the workspace artifact
//     tool_result_<id>, and a result of 40,000 characters or more is
//     replaced by a <knowledge_list> reference that the agent reads back
//     with the workspace tools (package workspace, seed 003). Results are
//     stored before pruning, so the workspace holds the originals of pruned
//     output too. Options.Offload selects file offload (package offload,
//     seed 000) instead, or none. With Options.StoreOnReplace (what
//     `agentctx proxy` runs) a result under 4,000 characters is stored
//     only when it is first pruned (unless it names a saved file: a
//     client's, or something agentctx stored): a request of many small
//     results writes nothing for those it keeps, and a compaction's
//     archive holds the ones it summarizes. A read of a file a client
//     saved a long output to, whose path an earlier result named, is
//     never replaced by a reference, as a read of the workspace is not.
//  4. count: the tokens of the list, plus Options.ReservedTokens (a system
//     prompt, tool definitions), against the trigger: 92% of the window.
//  5. compact: at or over the trigger, the middle of the list is archived
//     as a workspace artifact (compact_<hash>) and replaced by a summary
//     (package compact, seed 002).
//  6. validate: the list to send is checked for pairing.
//
// Each step's entry says what it changed, the characters and tokens it
// saved, the artifacts and files it wrote, and how long it took. The report
// also has the tokens before and after, whether the result is below the
// trigger, and Report.String renders a few lines for a person.
//
// # Compaction, once
//
// A compaction that cannot bring the list below the trigger (the most recent
// messages alone are too large, or the summary failed) is reported in
// Report.BelowThreshold and Report.Warnings; Prepare does not compact again
// in a loop.
//
// A Pipeline also remembers its last compaction. When the next call is given
// the same history grown by new messages (the usual agent loop, which keeps
// its full history and prepares it before each request), the summarized
// messages are replaced by the same summary instead of being summarized and
// archived again: the list sent keeps a stable beginning, which keeps
// provider prompt caches valid, and compaction runs again only when the list
// reaches the trigger again, with the earlier summary carried into the new
// one. The summary is reused only when those messages are byte for byte the
// ones summarized. Build one Pipeline per conversation; set Options.Stateless
// to make every call independent.
//
// A call given a shorter history than the session's last (a retry, a
// regenerate, a second client of the session sending an earlier request)
// is prepared from its own messages: a decision taken for the longer
// history applies to it only where it would be taken for it (its last turn
// and most recent results are never pruned away because later turns made
// them old), it takes no new decision on the longer history's results, and
// the session's state stays the longer history's, whose next call is
// prepared as if the shorter one had not come (Report.Warnings says so).
//
// # What changed, and what is known of each message
//
// Result.Sources says which messages a call changed: for each message to
// send, the index of the input message it is, unchanged, or -1.
// Result.Facts holds each message's hash and token count (see
// agentctx.Conversation). A caller that decoded the history and kept each
// message's encoding hands them in with PrepareConversation, so they are
// not made again. A Pipeline remembers what it counted and keyed by each
// message's content, not its memory: a caller that decodes or copies its
// history for every request keeps the memos (only new content is counted
// again).
//
// # Where the originals are
//
// Prepare never modifies the history it is given. What it takes out of the
// list sent is kept: tool results in the workspace (read them back with
// Workspace().Execute or "agentctx ws get"), offloaded files under their
// directory, summarized messages in the archive named in the report and in
// the summary itself. Options.Verify reads all of it back and compares it
// with the originals byte for byte.
//
// A summary says where the originals of what it covers are, so that an
// agent with nothing but a shell and a file reader can read an early value
// back: it ends with a "## Stored originals" section (compact.PointersTitle)
// with one line per stored result it covers that was pruned or offloaded,
// that names a saved file (a file the client saved output to, or
// something agentctx stored) whatever its size, or that was sent whole
// with at least 4,000 characters (a shorter one is left to the summary's
// line about its call and to the archive), one with the path of each file
// a client saved output to that a result names (compact adds it), and one
// for the archive
// (compact_<hash>). Each line has the artifact id and, for
// a store that keeps files (the default directory store), the absolute
// path of its content file:
//
//	## Stored originals
//	Kept whole: read one back with get_knowledge_by_id(...), or read its file. ...
//	- Bash `go test ./...` → tool_result_toolu_01 (/abs/.agentctx/default%2Fsessions%2Fdefault/tool_result_toolu_01.txt, 41,474 chars, 784 lines)
//
// A later compaction carries these lines into its own summary, up to
// compact.Options.MaxPointers; past it the oldest go first, and stay
// listed in the summary inside the archive that replaced them. On
// examples/session.json (--limit 14000) the section has 15 lines and
// 1,148 tokens: the summary grows from 2,008 to 3,156 tokens.
//
// # Evaluation and replay
//
// Two tools run the engine over recorded transcripts, through its exported
// API only: package pipeline/eval runs Prepare over every transcript in a
// directory and reports, per conversation, what was changed and whether
// everything read back identical ("agentctx eval DIR"); package
// pipeline/replay replays a recorded session request by request and
// reports the cache, the counts and the bill ("agentctx replay FILE").
//
// # Stored sessions and retention
//
// Sessions lists the sessions a workspace and a session store hold (size,
// requests, compactions, last activity), shows and deletes one, and
// prunes by a Retention (idle age, then size); PruneEvery runs it in the
// background of a server. A state is deleted only at the version judged,
// and an artifact only when no remaining session owns or names it
// ("agentctx sessions ls|show|rm|prune").
package pipeline
