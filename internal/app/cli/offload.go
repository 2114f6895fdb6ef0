package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/app/projectws"
	"github.com/agentctx/agentctx/offload"
)

type offloadOutput struct {
	Messages       []agentctx.Message `json:"messages"`        // every message given, offloaded results replaced by their file's name
	OffloadedCount int                `json:"offloaded_count"` // results written to files
	FreedChars     int                `json:"freed_chars"`     // characters taken out of the messages
	Files          []string           `json:"files"`           // absolute paths of the files written
}

type offloadOneOutput struct {
	Message    agentctx.Message `json:"message"`     // the message, its content replaced when offloaded
	FreedChars int              `json:"freed_chars"` // characters taken out of it
	File       string           `json:"file"`        // the file written; empty when the message was kept
	Files      []string         `json:"files"`       // every file written (the same, as a list)
}

func newOffloadCmd(e *env) *cobra.Command {
	var (
		dir          string
		minChars     int
		messagesOnly bool
	)
	cmd := &cobra.Command{
		Use:   "offload [FILE]",
		Short: "Move large tool results to files and leave a reference",
		Long: `offload writes every tool result of at least --min-chars characters to
<dir>/tool-result-<id>.md and replaces its content with
"[Content offloaded to: ./tool-result-<id>.md]".

Block arrays are written as their compact JSON. A repeated id takes the
suffix -1, -2, ...; an existing file is never overwritten (identical
content reuses it). It prints the new messages, offloaded_count,
freed_chars and files (absolute paths); the other members of a request
body (model, system, tools, ...) are kept around "messages" unless
--messages-only.`,
		Example: `  agentctx offload --dir .offload --min-chars 100 session.json
  agentctx offload --min-chars 2000 < request.json > offloaded.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if minChars < 1 {
				return usagef("--min-chars must be at least 1, got %d", minChars)
			}
			doc, err := e.readConversation(cmd.Context(), "offload", args)
			if err != nil {
				return err
			}
			removeStaleTemp(dir)
			created := projectws.Creating(dir)
			res, err := offload.Batch(cmd.Context(), doc.Messages, offload.BatchOptions{
				Dir:      dir,
				MinChars: minChars,
				Logger:   e.logger,
			})
			if err != nil {
				return err
			}
			if err := created(); err != nil { // made in a git work tree: kept out of it
				return &fileError{prefix: "--dir", err: err}
			}
			return e.writeEveryMessage(cmd.Context(), doc, res.Messages, offloadOutput{
				Messages:       res.Messages,
				OffloadedCount: res.OffloadedCount,
				FreedChars:     res.FreedChars,
				Files:          res.Files,
			}, messagesOnly)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", offload.DefaultDir, "directory of the offloaded files (created if missing)")
	cmd.Flags().IntVar(&minChars, "min-chars", offload.DefaultMinChars, "offload tool results of at least this many characters")
	cmd.Flags().BoolVar(&messagesOnly, "messages-only", false, "print the messages without the other members of a request body (model, system, tools, ...)")
	return cmd
}

func newOffloadOneCmd(e *env) *cobra.Command {
	var dir, session string
	cmd := &cobra.Command{
		Use:   "offload-one --session ID [FILE]",
		Short: "Move the tool results of one message to files",
		Long: `offload-one reads one message (a JSON object, or a document holding one
message) and writes each of its tool results, whatever its size, to
<dir>/<session>/<id>.md, replacing the content with
"[Tool result offloaded to file: <absolute path>]". A file written before
for the same id in the session is replaced.

It prints the new message, freed_chars (original characters minus the
reference's), file (the first path) and files (all paths).`,
		Example: `  agentctx offload-one --session s1 message.json
  echo '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"..."}]}' | agentctx offload-one --session s1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if session == "" {
				return usagef("--session is required")
			}
			doc, err := e.readConversation(cmd.Context(), "offload-one", args)
			if err != nil {
				return err
			}
			if len(doc.Messages) != 1 {
				return usagef("offload-one takes one message, the input holds %d (use offload for a history)", len(doc.Messages))
			}
			removeStaleTemp(dir, session)
			created := projectws.Creating(dir)
			res, err := offload.Message(cmd.Context(), doc.Messages[0], offload.MessageOptions{
				Dir:       dir,
				SessionID: session,
				Logger:    e.logger,
			})
			if err != nil {
				return err
			}
			if err := created(); err != nil { // made in a git work tree: kept out of it
				return &fileError{prefix: "--dir", err: err}
			}
			return e.writeJSON(cmd.Context(), offloadOneOutput{
				Message:    res.Message,
				FreedChars: res.FreedChars,
				File:       res.File,
				Files:      res.Files,
			})
		},
	}
	cmd.Flags().StringVar(&dir, "dir", offload.DefaultDir, "directory of the offloaded files")
	cmd.Flags().StringVar(&session, "session", "", "session id; files go to <dir>/<session>/ (required)")
	return cmd
}
