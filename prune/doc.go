// Package prune builds the view of a conversation that is sent to the model,
// with stale terminal output replaced by a one-line placeholder (SPEC §4,
// seed 004).
//
// Command output (builds, test runs, listings) is large and goes stale fast:
// after a while the agent needs to know that a command ran and succeeded,
// not every line it printed, and it can run the command again when it needs
// the details. [Prune] replaces the content of such results with
// "此命令返回内容已过时" ("this command's output is out of date"). It never
// modifies the stored history: it returns a new list, and a session restored
// later is pruned again the same way before each request.
//
// # Which results are pruned
//
// A tool result (an Anthropic tool_result block or an OpenAI role "tool"
// message) is replaced when all of these hold:
//
//  1. It is terminal output: its content contains "stdout":, "stderr": or
//     "exitCode":, or reports an exit status as an agent harness writes
//     it (mini-swe-agent, Codex, OpenHands), whatever the tool's name, or
//     the call it answers names a tool in [Options.ToolNames] (by default
//     [DefaultToolNames]: the seed's "terminal-execute", Claude Code's
//     "Bash", Codex's "shell", "exec_command" and "local_shell",
//     OpenHands' "execute_bash", Gemini CLI's "run_shell_command",
//     Cline's "execute_command" and "run_commands"; any case, so
//     SWE-agent's and opencode's "bash" too). With [Options.ByShape] a
//     result shaped like a shell transcript is terminal output too,
//     whatever its tool (an exit status line with a "Command:"/"Output:"
//     header or a stdout/stderr marker, or Cline's "Command executed."
//     then "Output:"; see [Class]): how an agent's shell tool that the
//     list does not name is learned. It is off by default, the seed's
//     rule (SPEC §4 names the content marks and the list, no shape);
//     agentctx's live commands turn it on. [Result.ByContent] names the
//     tools outside the list that counted by their content.
//  2. It is not an error: the content does not start with "Error:", the
//     message's messageStatus is not "error", is_error is not true, the
//     content parsed as JSON has no non-empty "stderr", and its "exitCode"
//     is 0 or absent; no exit status that a harness or (for terminal
//     output) a shell transcript reports is other than 0.
//  3. It is older than [Options.MaxAge] (15 minutes): now − timestamp is
//     strictly greater, so a result exactly 15:00.000 old is kept.
//  4. It is not among the [Options.KeepRecent] (5) most recent tool results.
//
// The recent window ranks the tool results of every tool (not only terminal
// ones) by timestamp, newest first, and counts only results that are not
// errors: errors are always kept and take no slot, so a run of failures
// cannot push successful output out of the window. Set
// [Options.CountErrors] to let errors take slots. Results at the same
// instant (several results in one message) rank by position, later first.
//
// Only results with a timestamp take part: the timestamp of the message that
// holds the result ("timestamp" in epoch milliseconds, RFC 3339 or epoch
// seconds; see [agentctx.Message.Timestamp]), in years 0–9999. Results
// without one are kept, take no slot in the window, and are counted in
// [Result.SkippedNoTimestamp].
//
// # What is kept
//
// Only the content of a pruned result changes; its role, ids, timestamp,
// messageStatus, is_error and every other member stay as they were. Changed
// messages are deep copies; unchanged messages are shared with the input,
// which is never written to.
//
// Pruning is monotone: a result pruned at time t is still pruned at any later
// time and after more results have arrived, because results only grow older
// and new results only push older ones out of the window. The view of the
// old part of a conversation therefore stays the same from one request to
// the next, which keeps provider prompt caches valid.
//
// # Restorable placeholders
//
// [Options.PlaceholderFunc] writes a placeholder per result, for example one
// that names the command and the workspace artifact that keeps the output:
//
//	res := prune.Prune(msgs, prune.Options{
//		PlaceholderFunc: func(s prune.Stale) string {
//			return fmt.Sprintf("[output of %q pruned; read artifact tool_result_%s]",
//				s.Command(), s.Result.ID)
//		},
//	})
package prune
