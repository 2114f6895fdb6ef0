package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
)

const pruneLong = `prune prints the view of a conversation to send to the model: the content of
every tool result that is successful terminal output, older than --max-age
and not among the --keep-recent most recent non-error results is replaced by
the placeholder. Errors are always kept. Only results whose message has a
timestamp take part. The input is not modified.

Terminal output is a result whose content contains "stdout":, "stderr": or
"exitCode":, or that answers a call of a --tool (terminal-execute, Bash,
Cline's run_commands, ...). With --by-shape (on in proxy, claude and codex)
a result shaped like a shell transcript counts too, whatever its tool.

--max-age 0 prunes at any age; --keep-recent 0 keeps no result for being
recent.

It prints {"messages", "pruned", "pruned_count", "freed_chars",
"freed_tokens"}; the other members of a request body (model, system,
tools, ...) are kept around "messages" unless --messages-only.`

func newPruneCmd(e *env) *cobra.Command {
	var (
		nowFlag      string
		maxAge       time.Duration
		keepRecent   int
		placeholder  string
		countErrors  bool
		tools        []string
		byShape      bool
		messagesOnly bool
	)
	cmd := &cobra.Command{
		Use:   "prune [FILE]",
		Short: "Replace stale successful terminal output with a placeholder in the view sent to the model",
		Long:  pruneLong,
		Example: `  agentctx prune --now 2026-01-31T02:00:00Z session.json
  agentctx prune --now 1769824800000 --keep-recent 3 < messages.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			if cmd.Flags().Changed("now") {
				t, ok := agentctx.ParseTime(nowFlag)
				if !ok {
					return usagef("invalid --now %q: want an RFC 3339 time or epoch milliseconds", nowFlag)
				}
				now = t
			}
			if maxAge < 0 {
				return usagef("invalid --max-age %s: must not be negative", maxAge)
			}
			if keepRecent < 0 {
				return usagef("invalid --keep-recent %d: must not be negative", keepRecent)
			}
			if placeholder == "" {
				return usagef("invalid --placeholder: must not be empty")
			}
			opts := prune.Options{
				Now:         func() time.Time { return now },
				MaxAge:      maxAge,
				KeepRecent:  keepRecent,
				CountErrors: countErrors,
				Placeholder: placeholder,
				ByShape:     byShape,
				Logger:      e.logger,
			}
			// On the command line 0 is literal; in Options it means the default.
			if maxAge == 0 {
				opts.MaxAge = -1
			}
			if keepRecent == 0 {
				opts.KeepRecent = -1
			}
			if cmd.Flags().Changed("tool") {
				opts.ToolNames = append([]string{}, tools...)
			}

			doc, err := e.readConversation(cmd.Context(), "prune", args)
			if err != nil {
				return err
			}
			res := prune.Prune(doc.Messages, opts)
			if res.SkippedNoTimestamp > 0 {
				e.logger.Info("prune: tool results without a timestamp were kept", "count", res.SkippedNoTimestamp)
			}
			return e.writeEveryMessage(cmd.Context(), doc, res.Messages, res, messagesOnly)
		},
	}
	f := cmd.Flags()
	f.StringVar(&nowFlag, "now", "", "the current time, RFC 3339 or epoch milliseconds (default the system clock)")
	f.DurationVar(&maxAge, "max-age", prune.DefaultMaxAge, "prune results strictly older than this")
	f.IntVar(&keepRecent, "keep-recent", prune.DefaultKeepRecent, "always keep this many most recent non-error results")
	f.StringVar(&placeholder, "placeholder", prune.DefaultPlaceholder, "the content that replaces a pruned result")
	f.BoolVar(&countErrors, "count-errors", false, "let error results take places among the --keep-recent most recent")
	f.StringSliceVar(&tools, "tool", prune.DefaultToolNames(), "a tool whose results are terminal output (repeatable; --tool= for none)")
	f.BoolVar(&byShape, "by-shape", false, byShapeHelp)
	f.BoolVar(&messagesOnly, "messages-only", false, "print the messages without the other members of a request body (model, system, tools, ...)")
	return cmd
}
