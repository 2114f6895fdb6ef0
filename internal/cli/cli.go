// Package cli is the agentctx command line: a thin layer over the library.
// Every command runs in-process through Run, with its streams passed in, so
// tests drive it with buffers.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
)

// Exit codes (SPEC §8).
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // runtime failure: I/O, a model call after its retries
	ExitUsage   = 2 // bad usage or bad input; nothing was written
)

// Streams are the standard streams of one run.
type Streams struct {
	In            io.Reader
	Out           io.Writer
	Err           io.Writer
	ErrIsTerminal bool // stderr is a terminal: human summaries go there
}

// usageError marks bad usage (unknown flag, wrong arguments, missing input
// file).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the process exit code: nil is 0; bad usage and
// bad input (agentctx.ErrInvalidInput, a missing input file) are 2; anything
// else is a runtime failure, 1. It is the only place that makes this choice.
func ExitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.Is(err, agentctx.ErrInvalidInput):
		return ExitUsage
	}
	return ExitFailure
}

// Run executes one agentctx command line and returns its exit code. Errors
// are printed to s.Err as one line.
func Run(ctx context.Context, args []string, s Streams) int {
	root := newRoot(&s)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && cmd == root {
		// The root runs nothing itself: any error there is cobra rejecting
		// the command line (an unknown command).
		err = &usageError{err}
	}
	if err != nil {
		fmt.Fprintf(s.Err, "agentctx: %s\n", oneLine(err.Error()))
	}
	return ExitCode(err)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// env holds what every command shares.
type env struct {
	s      *Streams
	logger *slog.Logger
}

func newRoot(s *Streams) *cobra.Command {
	e := &env{s: s}
	var verbose bool
	root := &cobra.Command{
		Use:   "agentctx",
		Short: "Keep an LLM agent's conversation inside its context window",
		Long: `agentctx counts, offloads, prunes and compacts LLM agent transcripts.

Input (FILE, or stdin when FILE is absent or "-"): a JSON array of messages,
a JSON object with "messages" (an Anthropic/OpenAI request body, a
mini-swe-agent .traj.json), JSON Lines of messages, or a Claude Code
session .jsonl. Results are JSON on stdout; diagnostics go to stderr.
Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad input.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelDebug
			}
			e.logger = slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: level}))
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log debug detail to stderr")
	root.AddCommand(newValidateCmd(e), newVersionCmd(e), newCountCmd(e), newOffloadCmd(e), newOffloadOneCmd(e), newPruneCmd(e), newWSCmd(e), newCompactCmd(e), newPrepareCmd(e), newEvalCmd(e))
	root.AddCommand(newSummaryEvalCmd(e))
	for _, c := range root.Commands() {
		c.Args = wrapArgs(c.Args)
	}
	return root
}

// wrapArgs marks argument-count errors as usage errors.
func wrapArgs(fn cobra.PositionalArgs) cobra.PositionalArgs {
	if fn == nil {
		return nil
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// readInput reads the document named by the first argument (stdin when
// absent or "-"). A missing file is a usage error.
func (e *env) readInput(ctx context.Context, args []string) (*agentctx.Document, error) {
	path := ""
	if len(args) > 0 {
		path = args[0]
	}
	doc, err := agentctx.ReadFile(ctx, path, e.s.In)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, &usageError{err}
		}
		var ie *agentctx.InputError
		if errors.As(err, &ie) && path != "" && path != "-" {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	return doc, nil
}

// readConversation reads the input like readInput and requires it to hold
// one conversation: commands whose output is one history cannot merge the
// several conversations of an OpenHands output.jsonl (prepare, eval and
// validate handle each of them).
func (e *env) readConversation(ctx context.Context, cmd string, args []string) (*agentctx.Document, error) {
	doc, err := e.readInput(ctx, args)
	if err != nil {
		return nil, err
	}
	if n := len(doc.Conversations()); n > 1 {
		return nil, usagef("the input holds %d conversations (%s); %s works on one: use prepare, or split the file", n, doc.Format, cmd)
	}
	return doc, nil
}

// writeJSON writes v as one line of JSON without HTML escaping.
func (e *env) writeJSON(v any) error {
	enc := json.NewEncoder(e.s.Out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
