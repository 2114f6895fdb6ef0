package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/summaryeval"
	"github.com/agentctx/agentctx/transcript"
)

// summaryEvalOutput is the JSON of summary-eval.
type summaryEvalOutput struct {
	Conversations []summaryeval.Row `json:"conversations"` // one row per conversation
	TargetsMet    bool              `json:"targets_met"`   // every row met every target
}

func newSummaryEvalCmd(e *env) *cobra.Command {
	var (
		limit, maxTokens          int
		tailRatio                 float64
		markdown, check, withText bool
	)
	cmd := &cobra.Command{
		Use:   "summary-eval PATH...",
		Short: "Score the extractive summary of transcripts against their history",
		Long: `summary-eval splits every conversation of the transcripts (files, or
directories of .json and .jsonl files) as compact would at --limit, writes
the extractive summary of the middle (even below the trigger), and scores it
against the middle and the kept tail: the share of the file paths and of
the identifiers that the middle and the tail share which the summary keeps,
the user's requests kept verbatim, the errors kept, the summary's size in
tokens, and its noise (repeated lines, placeholders, raw JSON).

Targets: 95% of the paths, 70% of the identifiers, every request, at most
--max-tokens tokens, no noise. --check exits 1 when a conversation misses
one. --markdown prints a table instead of JSON.`,
		Example: `  agentctx summary-eval --limit 100000 --markdown ../shared/transcripts examples/session.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit <= 0 || maxTokens < 0 || tailRatio < 0 || tailRatio >= 1 {
				return usagef("--limit must be positive, --max-tokens not negative, --tail-ratio in [0, 1)")
			}
			rows, err := summaryeval.Evaluate(cmd.Context(), args, summaryeval.Options{
				Limit:         limit,
				TailRatio:     tailRatio,
				MaxTokens:     maxTokens,
				KeepSummaries: withText,
				// Sessions as they went, unless --whole-history=false.
				Read: transcript.ReadOptions{WholeHistory: e.read.WholeHistory || !cmd.Flags().Changed("whole-history")},
			})
			switch {
			case errors.Is(err, fs.ErrNotExist): // a path named wrong
				return &fileError{err: err}
			case err != nil: // bad input, no transcripts: bad usage (ExitCode)
				return err
			}
			told := map[string]bool{}
			for _, r := range rows {
				if r.Notice != "" && !told[r.File+"\x00"+r.Notice] {
					told[r.File+"\x00"+r.Notice] = true
					e.notices = append(e.notices, fmt.Sprintf("notice: %s: %s\n", r.File, r.Notice))
				}
			}
			met := 0
			for _, r := range rows {
				if r.Met(maxTokens) {
					met++
				}
			}
			if markdown {
				if err := summaryeval.WriteMarkdown(e.s.Out, rows, maxTokens); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
			} else {
				enc := json.NewEncoder(e.s.Out)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(summaryEvalOutput{Conversations: rows, TargetsMet: met == len(rows)}); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
			}
			if check && met < len(rows) {
				return fmt.Errorf("%d of %d conversation(s) missed a target", len(rows)-met, len(rows))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", summaryeval.DefaultLimit, "context window in tokens the transcripts are split for")
	f.Float64Var(&tailRatio, "tail-ratio", compact.DefaultTailRatio, "share of the limit kept as the tail")
	f.IntVar(&maxTokens, "max-tokens", compact.DefaultSummaryTokens, "token budget of the summary")
	f.BoolVar(&markdown, "markdown", false, "print a Markdown table instead of JSON")
	f.BoolVar(&check, "check", false, "exit 1 when any conversation misses a target")
	f.BoolVar(&withText, "summaries", false, "include each summary in the JSON")
	return cmd
}
