// Package compact keeps a long conversation inside the context window by
// replacing the middle of its history with a summary, after archiving the
// original messages to a file (SPEC §6, seed 002).
//
// # Quick start
//
// Call Compact before each model request; it does nothing until the history
// reaches the threshold:
//
//	res, err := compact.Compact(ctx, msgs, compact.Options{SessionID: session})
//	if err != nil {
//		return err // invalid options, or ctx done
//	}
//	msgs = res.Messages
//	if !res.BelowThreshold {
//		// Compaction cannot help (see res.Reason): shrink the recent
//		// messages (offload, prune) or stop; do not compact again.
//	}
//
// The zero Options are the seed's defaults: a window of 200,000 tokens,
// compaction at ≥ 92% of it (184,000), a tail of ≥ 10% (20,000) kept whole,
// two retries, o200k_base counts, the offline Extractive summarizer, and
// archives under .offload/default. ShouldCompact and Check answer the
// question alone, without compacting.
//
// # Head, middle and tail
//
// Split divides the list: the head is the leading system messages; the
// tail is the most recent messages, added whole from the end until they
// reach the tail budget (the last one may overshoot); the middle is the
// rest, and is what gets summarized. The cut never separates a tool call
// from its result: when the tail would start with results whose call is in
// the middle, the calling message joins the tail, so a history whose calls
// and results pair (agentctx.ValidatePairing) still pairs after
// compaction, parallel calls and thinking blocks included. The compacted
// list is head + {role: "user", content: summary} + tail, a new slice; the
// input is never modified.
//
// # Summaries
//
// A Summarizer turns the middle into structured text with seed 002's five
// sections (goals and key decisions; file operations; tool calls; current
// state; errors and fixes) plus what a successor needs: the user's requests
// verbatim, key identifiers, the plan and the next steps. Extractive, the
// default, needs no model: it reads the user's requests, the tool calls and
// their results, file paths and edits, identifiers, errors, the todo list
// and the assistant's last words from the messages themselves,
// deterministically and within a token budget. ScoreSummary measures any
// summary against its history. ModelSummarizer
// asks a language model through the Model interface; the subpackages
// anthropicsum (Anthropic Messages API) and openaisum (OpenAI-compatible
// Chat Completions, local servers included) provide one over the official
// SDKs. The model's input is bounded: long tool results are shortened and
// a middle larger than InputTokens is summarized in parts that are then
// merged.
//
// A summary begins with SummaryTitle, and IsSummary recognises it: when the
// middle holds an earlier summary it is carried into the new one, so a
// conversation can be compacted any number of times.
//
// # Pointers
//
// A summary drops the text of what it covers, so it says where the
// originals are: it ends with a "## Stored originals" section (see
// PointersTitle), one line per Pointer, such as
//
//	## Stored originals
//	Kept whole: read one back with get_knowledge_by_id(...), or read its file. ...
//	- Bash `go test ./...` → tool_result_toolu_01 (/abs/.agentctx/ns/tool_result_toolu_01.txt, 60,127 chars, 812 lines)
//	- Archive of 89 messages → compact_4bbb520b5ce37c2c (/abs/.agentctx/ns/compact_4bbb520b5ce37c2c.txt, 123,456 bytes)
//
// The pointers are those of the tool results the caller stored
// (Options.Pointers: a pipeline gives the artifact id and, for a store with
// files, the absolute path of every stored result in the middle), then one
// for each file a result in the middle says the client saved a long output
// to, by its path, whatever the result's size (Claude Code's and Qwen
// Code's "Output too large (…). Full output saved to: /…", opencode's and
// Kilo's "… Full output saved to: /…": "- Bash `make` → /home/u/.claude/…/
// tool-results/toolu_01.txt"), then the archive's (its id and path), after
// the pointers of any earlier summary in the middle (ParsePointers reads
// them back), each once, so pointers
// survive any number of compactions. Options.MaxPointers bounds them
// (DefaultMaxPointers). Every summarizer gets them in Request.Pointers:
// Extractive writes the section, ModelSummarizer shows it to the model and
// asks it to keep it verbatim, and Compact then makes the section of every
// summary, of any Summarizer, exactly RenderPointers(Request.Pointers)
// (WithPointers): a pointer the model dropped or changed is put back, one
// it kept is not repeated. The section holds nothing volatile, so the same
// pointers give the same bytes.
//
// # Archive
//
// Before anything is summarized the middle is written, as indented JSON,
// to <Dir>/<SessionID>/compact-<timestamp>-<seq>.json, the timestamp in ISO
// 8601 basic format in UTC (compact-20261122T071400Z-1.json) from
// Options.Now, and seq one more than the highest in the directory. Writes
// are atomic and never replace a file; concurrent compactions never share a
// sequence number. A failed archive is logged and compaction goes on;
// Options.ArchiveRequired makes it an error. Options.Archiver keeps archives
// elsewhere (a pipeline keeps them as workspace artifacts compact_<hash>).
// The summary's pointer section names the archive (its artifact id, and its
// file's path when it has one), so the agent knows where the originals
// are. A file archive's path carries its timestamp, but the same messages
// archived again in the same directory reuse the file, so the same middle
// still gives the same summary.
//
// # Failures
//
// A summarizer error or an empty summary is retried up to MaxRetries times
// (default 2) with Backoff between attempts (1s, 2s, ...; a provider's
// Retry-After is honoured, and answers that cannot change, such as 401, are
// not retried). Every failed attempt is logged. When the last attempt
// fails, Compact returns the original list with Compacted false and
// ReasonSummarizerFailed; with Options.SummaryRequired it returns an error
// instead. Cancelling ctx stops at once with ctx's error.
//
// # Statistics and progress
//
// Result.Stats holds the seed's statistics (original and compacted token
// counts, their ratio, and the numbers of compacted and retained messages;
// all zero when nothing was compacted), with snake_case JSON names.
// Result.BelowThreshold says whether the new list is below the threshold.
// When it is not, Result.Reason says why: ReasonRetainedOverThreshold means
// the head and tail alone reach it, and ReasonNothingToCompact means there
// was no middle to summarize. Either way, compacting again will not help,
// and a caller should not loop.
//
// # Tokens
//
// Messages are counted by tokens.MessageCounter as SPEC §2 says: string
// content; text blocks; a tool_use's name and the JSON of its input; a
// tool_result's content, recursively; thinking text; an OpenAI tool call's
// name and arguments; images and documents by estimate. Other block types
// count nothing and are reported with a warning. Options.Counter picks the
// encoding (o200k_base by default); Options.MessageCounter lets an agent
// loop keep one counter, and its cache, across calls.
package compact
