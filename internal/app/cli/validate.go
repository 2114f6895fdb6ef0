package cli

import (
	"errors"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
)

type validateOutput struct {
	Name   string `json:"name,omitempty"` // the conversation's name, in a document that holds several
	Format string `json:"format"`         // the input's shape (agentctx formats lists them)
	agentctx.PairingReport
	Skipped      int                        `json:"skipped_records,omitempty"`    // records of the file that are not messages (progress, snapshots, sidechain, ...)
	SkippedKinds map[string]int             `json:"skipped_by_kind,omitempty"`    // the skipped records counted by kind
	Merged       int                        `json:"merged_records,omitempty"`     // Claude Code records folded into an earlier message
	Boundaries   []agentctx.CompactBoundary `json:"compact_boundaries,omitempty"` // the compact_boundary records of a Claude Code session
	Notice       string                     `json:"notice,omitempty"`             // one line on what the reader left out
}

type repairOutput struct {
	Messages []agentctx.Message     `json:"messages"` // the repaired messages
	Repairs  []agentctx.Repair      `json:"repairs"`  // what was changed, in order
	Before   validateOutput         `json:"before"`   // the input's check
	After    agentctx.PairingReport `json:"after"`    // the check of the repaired messages
}

func newValidateCmd(e *env) *cobra.Command {
	var repair, strict, messagesOnly bool
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check that every tool call is answered and every tool result answers a call",
		Long: `validate prints the pairing report of a conversation: every tool call
without a result in the next message (or run of "tool" messages), every
result that answers no call, duplicates, and results placed after text.

With --repair it prints the repaired messages instead: a synthetic error
result for each unanswered call, orphan results dropped; the other members
of a request body (model, system, tools, ...) are kept around "messages"
unless --messages-only. A document holding several conversations (an
OpenHands output.jsonl) gives one line per conversation.`,
		Example: `  agentctx validate session.jsonl
  agentctx validate --repair --strict request.json > repaired.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !repair && messagesOnly {
				return usagef("--messages-only goes with --repair: validate prints no messages without it")
			}
			doc, err := e.readInput(ctx, args)
			if err != nil {
				return err
			}
			// A document may hold several conversations (an OpenHands
			// output.jsonl): each is checked on its own, one line each.
			unpaired := false
			for _, conv := range doc.Conversations() {
				rep := agentctx.ValidatePairing(conv.Messages)
				out := validateOutput{Name: conv.Name, Format: string(doc.Format), PairingReport: rep, Skipped: conv.Skipped, Merged: conv.Merged,
					SkippedKinds: conv.SkippedKinds, Boundaries: conv.Boundaries, Notice: conv.Notice()}
				if !repair {
					unpaired = unpaired || !rep.Valid
					if err := e.writeJSON(ctx, out); err != nil {
						return err
					}
					continue
				}
				msgs, repairs := agentctx.RepairPairing(conv.Messages)
				after := agentctx.ValidatePairing(msgs)
				unpaired = unpaired || !after.Valid
				if err := e.writeEveryMessage(ctx, conv, msgs, repairOutput{Messages: msgs, Repairs: repairs, Before: out, After: after}, messagesOnly); err != nil {
					return err
				}
			}
			if strict && unpaired {
				if repair {
					return errors.New("history is still unpaired after repair")
				}
				return errors.New("history has unpaired tool calls or results")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "print the repaired messages and what was changed")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when the history is (still) unpaired")
	cmd.Flags().BoolVar(&messagesOnly, "messages-only", false, "with --repair: print the messages without the other members of a request body (model, system, tools, ...)")
	return cmd
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the agentctx version, Go version and commit as JSON",
		Long: `version prints {"version", "go", "commit"}. agentctx --version prints the
version alone.`,
		Example: `  agentctx version`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionOutput{Version: agentctx.Version, Go: runtime.Version()}
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						v.Commit = s.Value
					}
				}
			}
			return e.writeJSON(cmd.Context(), v)
		},
	}
}

// versionOutput is what agentctx version prints.
type versionOutput struct {
	Version string `json:"version"`          // agentctx's version
	Go      string `json:"go"`               // the Go release it was built with
	Commit  string `json:"commit,omitempty"` // the VCS revision it was built from, when the build recorded it
}
