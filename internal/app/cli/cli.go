// Package cli is the agentctx command line: a thin layer over the library.
// Every command runs in-process through Run, with its streams passed in, so
// tests drive it with buffers.
package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/summaryeval"
	"github.com/agentctx/agentctx/internal/app/config"
	"github.com/agentctx/agentctx/internal/base/otlphttp"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/launch"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/eval"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/transcript"
	"github.com/agentctx/agentctx/workspace"
)

// Exit codes.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // runtime failure: I/O, a model call after its retries
	ExitUsage       = 2   // bad usage or bad input; nothing was written
	ExitInterrupted = 130 // stopped by Ctrl-C (SIGINT) or SIGTERM; nothing half-written
)

// Streams are the standard streams of one run, and what the process knows
// about them.
type Streams struct {
	In            io.Reader
	Out           io.Writer
	Err           io.Writer
	InIsTerminal  bool // stdin is a terminal: a hint is printed before waiting on it
	OutIsTerminal bool // stdout is a terminal: prepare --out prints its JSON reports only with --json
	ErrIsTerminal bool // stderr is a terminal: human summaries and progress go there

	// LookupEnv reads the environment variables that give defaults to
	// common flags (AGENTCTX_WORKSPACE, AGENTCTX_LIMIT, ...; see envFlags).
	// Nil means no environment.
	LookupEnv func(string) (string, bool)

	// Signals are the signals the process received, for the commands that
	// run a client (claude, codex; see Traits.OwnsSignals), which forward them to
	// it. Nil: none.
	Signals <-chan os.Signal
}

// usageError marks bad usage (unknown flag, wrong arguments, a flag's
// value out of range): what the command line itself got wrong.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// fileError is a file the user named (an argument, a flag's value) that
// could not be opened, read or created. Its message is the cause's, with
// prefix before it when not empty.
type fileError struct {
	prefix string
	err    error
}

func (e *fileError) Error() string {
	if e.prefix == "" {
		return e.err.Error()
	}
	return e.prefix + ": " + e.err.Error()
}

func (e *fileError) Unwrap() error { return e.err }

// wrongName reports whether the file was named wrong (it does not exist, a
// directory was named where a file is wanted, or a path goes through a
// file), rather than the system failing to read or write it.
func (e *fileError) wrongName() bool {
	return errors.Is(e.err, fs.ErrNotExist) || errors.Is(e.err, syscall.EISDIR) || errors.Is(e.err, syscall.ENOTDIR)
}

// errInterrupted is the error of a run stopped by its context.
var errInterrupted = errors.New("interrupted")

// badInput reports an error the library marks as bad input or a bad
// option, wherever it comes from.
func badInput(err error) bool {
	for _, target := range []error{
		agentctx.ErrInvalidInput, workspace.ErrInvalidLocation, config.ErrInvalid,
		pipeline.ErrInvalidOption, compact.ErrInvalidOption, tokens.ErrUnknownEncoding,
		eval.ErrNoTranscripts, replay.ErrNoRequests, summaryeval.ErrNoTranscripts,
		proxy.ErrInvalidURL, proxy.ErrOTLPProtocol, proxy.ErrOTELExporter, otlphttp.ErrInvalid, launch.ErrClientNotFound, launch.ErrProxyUnavailable,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// ExitCode maps an error to the process exit code: nil is 0; a client's
// own exit code is itself; a cancelled run is 130; bad usage and bad input
// (a usage error, an error the library marks as invalid input or option:
// see badInput, a named file that does not exist or is a directory) are 2;
// anything else is a runtime failure, 1: I/O, permission, a full disk, a
// model call after its retries, a named file that exists but cannot be
// read. It is the only place that makes this choice: commands return typed
// errors (usagef, fileError, the library's) and never pick a code.
func ExitCode(err error) int {
	var ue *usageError
	var ce *clientExit
	var fe *fileError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, errInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &fe):
		if fe.wrongName() {
			return ExitUsage
		}
		return ExitFailure
	case errors.As(err, &ue), badInput(err):
		return ExitUsage
	}
	return ExitFailure
}

// Run executes one agentctx command line and returns its exit code. Errors
// are printed to s.Err as one line. When ctx is cancelled (main cancels it
// on the first Ctrl-C), the command stops at its next step, writes nothing
// more to stdout, and Run returns ExitInterrupted.
func Run(ctx context.Context, args []string, s Streams) int {
	e := &env{s: &s}
	root := newRoot(e)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && cmd == root && !e.ran && ctx.Err() == nil {
		// An error of the root before its hooks ran is cobra rejecting
		// the command line (an unknown command).
		err = &usageError{err}
	}
	if err != nil && ctx.Err() != nil {
		// Whatever the step that noticed reports, the cause is the
		// interrupt.
		err = errInterrupted
	}
	var ce *clientExit
	if err != nil && !errors.As(err, &ce) {
		// The library's sentinels name it ("agentctx: invalid input"):
		// the line says agentctx once.
		fmt.Fprintf(s.Err, "agentctx: %s\n", strings.TrimPrefix(oneLine(err.Error()), "agentctx: "))
	} else if err == nil {
		e.printNotices()
	}
	return ExitCode(err)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// env holds what every command shares.
type env struct {
	s       *Streams
	logger  *slog.Logger
	read    transcript.ReadOptions // --whole-history
	told    map[string]bool        // inputs whose reader notice was taken
	notices []string               // printed after a successful run
	cfg     configState            // --config, the file read, the settled flags
	ran     bool                   // the command line was accepted: the hooks ran
}

func newRoot(e *env) *cobra.Command {
	s := e.s
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	var verbose bool
	root := &cobra.Command{
		Use:   "agentctx",
		Short: "Keep an LLM agent's conversation inside its context window",
		Long: `agentctx counts, offloads, prunes and compacts the conversations of LLM
agents, so that they fit the model's context window and nothing is lost.

Every command reads FILE, or stdin when FILE is absent or "-". Accepted
(agentctx formats lists them with examples):
` + inputFormats + `
Results are JSON on stdout; errors (one line) go to stderr, with a notice
when records of the input were skipped, and logs only with -v. Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad
input (nothing is written), 130 interrupted (Ctrl-C).

Every flag takes its value from, in order: the command line, an
environment variable (below), the configuration file (JSON, --config;
"agentctx config" shows the file and every effective setting), its default.
Environment variables:
`,
		Example: `  agentctx count session.jsonl
  agentctx prepare --limit 100000 session.jsonl > prepared.json
  source <(agentctx completion bash)`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			e.ran = true
			if verbose {
				e.logger = slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			return e.settle(cmd)
		},
		// --version is answered here rather than by cobra's version
		// template: a template links text/template's reflection, which
		// switches off the linker's dead-code elimination (a binary 33 MB
		// larger; see TestNoReflectMethodLookup).
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v, _ := cmd.Flags().GetBool("version"); v {
				_, err := fmt.Fprintf(s.Out, "agentctx %s\n", agentctx.Version)
				return err
			}
			return cmd.Help()
		},
	}
	root.Flags().Bool("version", false, "print the agentctx version")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log debug detail to stderr")
	root.PersistentFlags().StringVar(&e.cfg.flag, "config", "", "configuration file (JSON; default $"+config.EnvConfig+", else $XDG_CONFIG_HOME/agentctx/config.json)")
	root.PersistentFlags().BoolVar(&e.read.WholeHistory, "whole-history", false, "read a compacted Claude Code session whole, not from its last compact boundary on")
	root.AddCommand(newValidateCmd(e), newVersionCmd(e), newCountCmd(e), newOffloadCmd(e), newOffloadOneCmd(e), newPruneCmd(e), newWSCmd(e), newCompactCmd(e), newPrepareCmd(e), newEvalCmd(e), newReplayCmd(e), newFormatsCmd(e))
	root.AddCommand(newReportCmd(e))
	root.AddCommand(newProxyCmd(e), newMCPCmd(e), newToolsCmd(e), newSummaryEvalCmd(e))
	root.AddCommand(newConfigCmd(e), newSessionsCmd(e), newSavingsCmd(e))
	root.AddCommand(newLaunchCmd(e, launch.Claude), newLaunchCmd(e, launch.Codex), newLaunchCmd(e, launch.Gemini))
	for _, c := range root.Commands() {
		c.Args = wrapArgs(c.Args)
	}

	// Commands of this file; new commands register on the AddCommand line
	// above.
	root.AddCommand(newCompletionCmd(root))
	root.Long += envHelp(root)
	documentEnv(root)
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

// inputFormats lists the documents every command reads, for help texts.
const inputFormats = `  - a JSON array of messages (Anthropic or OpenAI chat shape);
  - a JSON object with "messages": an Anthropic or OpenAI request body (its
    model, system, tools, ... are kept) or a mini-swe-agent .traj.json;
  - a SWE-agent .traj (its "history");
  - JSON Lines, one message per line;
  - a Claude Code session .jsonl (~/.claude/projects/*/*.jsonl), main or
    subagent, from its last compact boundary on (--whole-history: all);
  - an OpenHands evaluation output.jsonl (one conversation per record).`

// stdinHint is printed before waiting on a terminal.
const stdinHint = "agentctx: reading a conversation from stdin (the terminal): paste it and press Ctrl-D, or give a FILE; Ctrl-C cancels"

// readInput reads the document named by the first argument (stdin when
// absent or "-"). A missing file or a directory is a usage error; a file
// that cannot be read is a runtime failure (see ExitCode). Reading
// stdin stops when ctx is cancelled, even while it waits on a terminal.
func (e *env) readInput(ctx context.Context, args []string) (*agentctx.Document, error) {
	path := ""
	if len(args) > 0 {
		path = args[0]
	}
	var (
		doc *agentctx.Document
		err error
	)
	if path == "" || path == "-" {
		doc, err = e.readStdin(ctx)
	} else {
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return nil, usagef("%s is a directory: give a conversation file", path)
		}
		doc, err = e.read.ReadFile(ctx, path, nil)
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil {
		e.notice(path, doc)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, &fileError{err: err}
		}
		var ie *agentctx.InputError
		if errors.As(err, &ie) && path != "" && path != "-" {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	return doc, nil
}

// notice takes, once per input, what the reader left out or found (no
// messages, records skipped by kind, compact boundaries): a document is
// never read short in silence. The notices are printed to stderr when the
// command succeeds (a failure prints its one-line error only).
func (e *env) notice(path string, doc *agentctx.Document) {
	n := doc.Notice()
	if n == "" || e.told[path] {
		return
	}
	if e.told == nil {
		e.told = map[string]bool{}
	}
	e.told[path] = true
	e.notices = append(e.notices, fmt.Sprintf("notice: %s: %s\n", cmp.Or(path, "-"), n))
}

func (e *env) printNotices() {
	for _, n := range e.notices {
		io.WriteString(e.s.Err, n)
	}
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

// readStdin reads the document on stdin. On a terminal it prints a hint
// first. The read runs aside so that a cancelled ctx returns at once: a
// read blocked on a terminal does not see the context.
func (e *env) readStdin(ctx context.Context) (*agentctx.Document, error) {
	if e.s.InIsTerminal {
		fmt.Fprintln(e.s.Err, stdinHint)
	}
	type result struct {
		doc *agentctx.Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		doc, err := e.read.ReadDocument(ctx, e.s.In)
		done <- result{doc, err}
	}()
	select {
	case r := <-done:
		return r.doc, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// writeJSON writes v as one line of JSON without HTML escaping, in one
// write, unless ctx is cancelled: an interrupted command prints nothing.
func (e *env) writeJSON(ctx context.Context, v any) error {
	b, err := rawjson.Marshal(v)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return e.writeLine(ctx, b)
}

// writeIndentedJSON writes v as JSON indented for a reader (a terminal).
func (e *env) writeIndentedJSON(ctx context.Context, v any) error {
	b, err := rawjson.Marshal(v)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return e.writeLine(ctx, buf.Bytes())
}

// writeLine writes b and a newline in one write, unless ctx is cancelled.
func (e *env) writeLine(ctx context.Context, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := e.s.Out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// writeDocResult writes result, a JSON object with "messages" (the
// messages of doc after the command), keeping the whole document: when doc
// is a request body or any JSON object with more members than "messages"
// (model, system, tools, max_tokens, ...), those members are printed
// first, in the input's order, with the messages in their place, and the
// result's other fields after them. With messagesOnly, or for input that
// is not an object, result is printed as it is.
func (e *env) writeDocResult(ctx context.Context, doc *agentctx.Document, msgs []agentctx.Message, result any, messagesOnly bool) error {
	if messagesOnly || doc.Format != agentctx.FormatObject {
		return e.writeJSON(ctx, result)
	}
	body, err := doc.WithMessages(msgs).AppendJSON(nil)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	res, err := rawjson.Marshal(result)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	bodyMembers, err1 := rawjson.Members(body)
	resMembers, err2 := rawjson.Members(res)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("write output: %w", errors.Join(err1, err2))
	}
	have := make(map[string]bool, len(bodyMembers))
	for _, m := range bodyMembers {
		have[m.Key] = true
	}
	out := bytes.TrimRight(body, "\n")
	out = out[:len(out)-1] // the closing brace
	for _, m := range resMembers {
		if m.Key == "messages" {
			continue
		}
		if have[m.Key] {
			return usagef("the input's member %q has the name of an output field: use --messages-only", m.Key)
		}
		out = append(out, ',')
		out = append(out, m.RawKey...)
		out = append(out, ':')
		out = append(out, m.Value...)
	}
	out = append(out, '}')
	return e.writeLine(ctx, out)
}

// writeEveryMessage is writeDocResult for the single-shot commands
// (offload, ws offload, prune, compact, validate --repair), which return every message they were given:
// the messages kept in the file but never sent (mini-swe-agent's "exit")
// are put back at their places.
func (e *env) writeEveryMessage(ctx context.Context, doc *agentctx.Document, msgs []agentctx.Message, result any, messagesOnly bool) error {
	if len(doc.NonModel()) == 0 || (!messagesOnly && doc.Format == agentctx.FormatObject) {
		return e.writeDocResult(ctx, doc, msgs, result, messagesOnly)
	}
	out, err := withMessagesMember(result, doc.WithMessages(msgs).FileMessages())
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return e.writeLine(ctx, out)
}

// withMessagesMember returns result as JSON with its "messages" member
// replaced by msgs.
func withMessagesMember(result any, msgs []agentctx.Message) ([]byte, error) {
	res, err := rawjson.Marshal(result)
	if err != nil {
		return nil, err
	}
	members, err := rawjson.Members(res)
	if err != nil {
		return nil, err
	}
	list, err := agentctx.MarshalMessages(msgs)
	if err != nil {
		return nil, err
	}
	out := []byte{'{'}
	for k, m := range members {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, m.RawKey...)
		out = append(out, ':')
		if m.Key == "messages" {
			out = append(out, list...)
		} else {
			out = append(out, m.Value...)
		}
	}
	return append(out, '}'), nil
}
