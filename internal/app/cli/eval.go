package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/pipeline/eval"
)

func newEvalCmd(e *env) *cobra.Command {
	f := &prepareFlags{}
	var work string
	var markdown, check bool
	cmd := &cobra.Command{
		Use:   "eval DIR",
		Short: "Run prepare over every transcript in a directory and report the figures",
		Long: `eval runs prepare on every transcript in DIR (files ending in .json or
.jsonl; a file holding several conversations, such as an OpenHands
output.jsonl, gives one row per conversation), each with a fresh workspace,
and reads back every artifact and archive written to compare it with the
original byte for byte.

It prints, per conversation: format, messages and tokens before and after,
whether the output is below the trigger and its tool calls pair up, what
was pruned, stored, replaced and archived (in bytes), whether everything
read back identical, and the time to read and to prepare. --markdown prints
a Markdown table instead of JSON.

Workspaces and archives go to a temporary directory that is removed
afterwards, or to --work. With --check the command exits 1 when any
conversation misses a target (an error, an unpaired output, an output at or
over the trigger, or a read-back mismatch).`,
		Example: `  agentctx eval --limit 100000 ../shared/transcripts
  agentctx eval --limit 100000 --markdown --check ../shared/transcripts`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fi, err := os.Stat(args[0])
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return usagef("%s: no such directory", args[0])
			case err != nil:
				return err
			case !fi.IsDir():
				return usagef("%s is not a directory", args[0])
			}
			base, err := f.options(e, cmd.Flags().Changed)
			if err != nil {
				return err
			}
			bar := newProgress(e.s.Err, e.s.ErrIsTerminal, 0)
			ev, err := eval.Run(cmd.Context(), args[0], eval.Options{
				Options: base,
				WorkDir: work,
				Read:    e.read,
				Progress: func(done, total int, file string) {
					bar.total = total
					bar.update(done, file)
				},
			})
			bar.finish()
			if err != nil {
				return err
			}
			if err := cmd.Context().Err(); err != nil {
				return err
			}
			if markdown {
				if err := ev.WriteMarkdown(e.s.Out); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
			} else if err := e.writeJSON(cmd.Context(), ev); err != nil {
				return err
			}
			if check && !ev.OK() {
				return fmt.Errorf("%d of %d conversation(s) missed a target", ev.Conversations-ev.Passed, ev.Conversations)
			}
			return nil
		},
	}
	f.register(cmd.Flags(), true)
	cmd.Flags().StringVar(&work, "work", "", "keep the workspaces and archives in this directory (default: a temporary one, removed)")
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print a Markdown table instead of JSON")
	cmd.Flags().BoolVar(&check, "check", false, "exit 1 when any conversation misses a target")
	return cmd
}
