package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/anthropicsum"
	"github.com/agentctx/agentctx/compact/openaisum"
	"github.com/agentctx/agentctx/internal/app/projectws"
	"github.com/agentctx/agentctx/internal/base/secret"
	"github.com/agentctx/agentctx/tokens"
)

// Summarizer names accepted by --summarizer.
const (
	summarizerExtractive = "extractive"
	summarizerAnthropic  = "anthropic"
	summarizerOpenAI     = "openai"
)

// compactFlags are the flags of compact.
type compactFlags struct {
	summaryFlags
	dir, session string
	check        bool
	messagesOnly bool
}

// summaryFlags are the compaction flags compact and prepare share.
type summaryFlags struct {
	limit                int
	threshold, tailRatio float64
	maxRetries           int
	summarizer, model    string
	apiKey, baseURL      string
	timeout, backoff     time.Duration
	inputTokens          int
	force, strict        bool
	noArchive            bool
}

// register adds the shared compaction flags.
func (f *summaryFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.limit, "limit", compact.DefaultLimit, "context window, in tokens")
	fs.Float64Var(&f.threshold, "threshold", compact.DefaultThreshold, "compact when the tokens reach this ratio of --limit")
	fs.Float64Var(&f.tailRatio, "tail-ratio", compact.DefaultTailRatio, "keep the most recent messages worth this ratio of --limit")
	fs.IntVar(&f.maxRetries, "max-retries", compact.DefaultMaxRetries, "retries after a failed summary (0: none)")
	fs.StringVar(&f.summarizer, "summarizer", summarizerExtractive, "extractive, anthropic or openai")
	fs.StringVar(&f.model, "model", "", "model for --summarizer anthropic or openai (default "+anthropicsum.DefaultModel+" / "+openaisum.DefaultModel+")")
	fs.StringVar(&f.apiKey, "api-key", "", "API key for the summarizer (default $ANTHROPIC_API_KEY / $OPENAI_API_KEY)")
	fs.StringVar(&f.baseURL, "base-url", "", "API base URL for the summarizer (default $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "bound on each summarizer attempt (0: none)")
	fs.DurationVar(&f.backoff, "backoff", time.Second, "wait before the first retry, doubled for each next one (up to 30s)")
	fs.IntVar(&f.inputTokens, "input-tokens", compact.DefaultInputTokens, "most tokens of conversation per model call; larger middles are summarized in parts")
	fs.BoolVar(&f.force, "force", false, "compact even below the threshold")
	fs.BoolVar(&f.strict, "strict", false, "fail (exit 1) when the archive or the summary fails")
	fs.BoolVar(&f.noArchive, "no-archive", false, "do not archive the compacted messages")
}

// checkRanges checks the shared compaction flags that have a range.
func (f *summaryFlags) checkRanges() error {
	switch {
	case f.limit < 1:
		return usagef("invalid --limit %d: must be at least 1", f.limit)
	case f.maxRetries < 0:
		return usagef("invalid --max-retries %d: must not be negative", f.maxRetries)
	case f.timeout < 0:
		return usagef("invalid --timeout %s: must not be negative", f.timeout)
	case f.backoff < 0:
		return usagef("invalid --backoff %s: must not be negative", f.backoff)
	case f.inputTokens < 0:
		return usagef("invalid --input-tokens %d: must not be negative", f.inputTokens)
	}
	return nil
}

// compactOptions returns the compaction options the flags make, with the
// summarizer they name when summarize is set.
func (f *summaryFlags) compactOptions(e *env, summarize bool) (compact.Options, error) {
	o := compact.Options{
		Limit:           f.limit,
		Threshold:       f.threshold,
		TailRatio:       f.tailRatio,
		MaxRetries:      f.maxRetries,
		AttemptTimeout:  f.timeout,
		Backoff:         doubling(f.backoff),
		Force:           f.force,
		NoArchive:       f.noArchive,
		ArchiveRequired: f.strict,
		SummaryRequired: f.strict,
	}
	// On the command line 0 is literal; in Options it means the default.
	if f.tailRatio == 0 {
		o.TailRatio = -1
	}
	if f.maxRetries == 0 {
		o.MaxRetries = -1
	}
	if summarize {
		s, err := newSummarizer(e, f.summarizer, f.model, f.apiKey, f.baseURL, f.inputTokens)
		if err != nil {
			return o, err
		}
		o.Summarizer = s
	}
	return o, nil
}

const compactLong = `compact replaces the middle of a conversation with a summary when its tokens
reach --limit × --threshold (or always, with --force). The leading system
messages (head) and the most recent messages worth --limit × --tail-ratio
tokens (tail) are kept whole; a tool call is never separated from its
result. Before anything is replaced, the middle is written as indented JSON
to <dir>/<session>/compact-<timestamp>-<seq>.json.

It prints {"messages", "compacted", "stats", "archive", "summary"} and the
progress: "tokens" and "threshold_tokens" after compaction,
"below_threshold", and a "reason" when nothing was compacted or the result
is still over the threshold (compacting again would not help then). With
--check it only prints {"should_compact", "tokens", "threshold_tokens"}.
The top-level "system" of a request body counts toward the threshold, and
the output keeps the request body's other members (model, system, tools,
...) around "messages"; --messages-only leaves them out.

Summarizers: extractive (default; offline and deterministic), anthropic
(Messages API; ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) and openai (any
OpenAI-compatible Chat Completions server; OPENAI_API_KEY, OPENAI_BASE_URL;
a local server needs no key). --api-key and --base-url override the
environment. A summary that fails is retried --max-retries times; after the
last failure the original messages are printed with "compacted": false
(exit 0), or, with --strict, the command fails (exit 1). A failed archive is
logged and compaction goes on, unless --strict.`

func newCompactCmd(e *env) *cobra.Command {
	f := &compactFlags{}
	cmd := &cobra.Command{
		Use:   "compact [FILE]",
		Short: "Summarize the middle of a long conversation and archive the originals",
		Long:  compactLong,
		Example: `  agentctx compact --check session.jsonl
  agentctx compact --force --limit 14000 examples/session.json
  agentctx compact --limit 100000 --session s1 session.jsonl > compacted.json
  agentctx compact --summarizer openai --base-url http://localhost:11434/v1 --model qwen3:8b --input-tokens 24000 < messages.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompact(cmd, e, f, args)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func (f *compactFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.dir, "dir", compact.DefaultDir, "directory of the archives (created if missing)")
	fs.StringVar(&f.session, "session", compact.DefaultSessionID, "session id: the archive subdirectory")
	f.summaryFlags.register(fs)
	fs.BoolVar(&f.check, "check", false, "only report whether compaction is due")
	fs.BoolVar(&f.messagesOnly, "messages-only", false, "print the messages without the other members of a request body (model, system, tools, ...)")
}

// validate checks the flags alone: ranges, and flags that contradict
// --check or --no-archive.
func (f *compactFlags) validate(cmd *cobra.Command) error {
	if err := checkRatios(f.threshold, f.tailRatio); err != nil {
		return err
	}
	if f.check {
		if err := contradicts(cmd, "check", "force", "strict", "no-archive", "dir", "summarizer", "model", "api-key", "base-url",
			"max-retries", "timeout", "backoff", "input-tokens", "messages-only"); err != nil {
			return err
		}
	}
	if f.noArchive {
		if err := contradicts(cmd, "no-archive", "dir"); err != nil {
			return err
		}
	}
	if err := f.summaryFlags.checkRanges(); err != nil {
		return err
	}
	switch {
	case f.session == "":
		return usagef("invalid --session: must not be empty")
	case f.dir == "" && !f.noArchive:
		return usagef("invalid --dir: must not be empty")
	}
	return nil
}

// options returns the compact options the flags make, with the summarizer
// unless --check (which summarizes nothing).
func (f *compactFlags) options(e *env) (compact.Options, error) {
	opts, err := f.compactOptions(e, !f.check)
	opts.Dir, opts.SessionID, opts.Logger = f.dir, f.session, e.logger
	return opts, err
}

// runCompact runs compact: the flags checked before the input is read,
// then --check's report or the compacted conversation.
func runCompact(cmd *cobra.Command, e *env, f *compactFlags, args []string) error {
	if err := f.validate(cmd); err != nil {
		return err
	}
	opts, err := f.options(e)
	if err != nil {
		return err
	}
	doc, err := e.readConversation(cmd.Context(), "compact", args)
	if err != nil {
		return err
	}
	// A request body's top-level system prompt and tool definitions are
	// sent with the messages: they count toward the threshold.
	opts.ReservedTokens = tokens.NewMessageCounter(tokens.MessageOptions{CacheSize: -1, Logger: e.logger}).CountRequestExtras(doc)
	if f.check {
		res, err := compact.Check(doc.Messages, opts)
		if err != nil {
			return err // compact.ErrInvalidOption: bad usage (ExitCode)
		}
		return e.writeJSON(cmd.Context(), res)
	}
	removeStaleTemp(f.dir, f.session)
	created := projectws.Creating(f.dir)
	res, err := compact.Compact(cmd.Context(), doc.Messages, opts)
	if err != nil {
		return err
	}
	if err := created(); err != nil { // an archive directory made in a git work tree
		return &fileError{prefix: "--dir", err: err}
	}
	f.warn(e, res)
	return e.writeEveryMessage(cmd.Context(), doc, res.Messages, res, f.messagesOnly)
}

// warn says on stderr what a compaction that went on without --strict
// lost: the summary (the messages printed uncompacted) or the archive.
func (f *compactFlags) warn(e *env, res *compact.Result) {
	if res.Reason == compact.ReasonSummarizerFailed {
		fmt.Fprintf(e.s.Err, "agentctx: warning: the summarizer failed after %d attempt(s): %s; the messages are printed uncompacted (--strict makes it fatal)\n",
			res.Attempts, secret.Scrub(res.SummaryError, f.apiKey))
	}
	if res.Compacted && res.Archive == "" && !f.noArchive {
		fmt.Fprintf(e.s.Err, "agentctx: warning: the summarized messages were not archived in %s (-v tells why; --strict makes it fatal)\n", f.dir)
	}
}

// checkRatios checks --threshold and --tail-ratio: a trigger above 0 and at
// most the whole window; a tail of at least 0 and less than the window.
func checkRatios(threshold, tailRatio float64) error {
	switch {
	case !(threshold > 0 && threshold <= 1):
		return usagef("invalid --threshold %v: must be above 0 and at most 1 (a share of --limit)", threshold)
	case !(tailRatio >= 0 && tailRatio < 1):
		return usagef("invalid --tail-ratio %v: must be at least 0 and below 1 (a share of --limit)", tailRatio)
	}
	return nil
}

// contradicts returns a usage error when flag (given) and any of others
// were given on the command line together: the others have no effect with
// it, or ask for the opposite.
func contradicts(cmd *cobra.Command, flag string, others ...string) error {
	for _, o := range others {
		if cmd.Flags().Changed(o) {
			return usagef("--%s and --%s cannot be used together", flag, o)
		}
	}
	return nil
}

// doubling returns a backoff that waits first, then twice as long for each
// further retry, at most 30 seconds.
func doubling(first time.Duration) func(int) time.Duration {
	return func(retry int) time.Duration {
		d := first
		for i := 1; i < retry && d < 30*time.Second; i++ {
			d *= 2
		}
		return min(d, 30*time.Second)
	}
}

// newSummarizer builds the summarizer named by --summarizer. Credentials
// and base URLs not given by flag come from the environment, through the
// provider packages; they are never logged.
func newSummarizer(e *env, name, model, apiKey, baseURL string, inputTokens int) (compact.Summarizer, error) {
	switch name {
	case summarizerExtractive:
		if model != "" || apiKey != "" || baseURL != "" {
			return nil, usagef("--model, --api-key and --base-url need --summarizer anthropic or openai")
		}
		return compact.Extractive{}, nil
	case summarizerAnthropic:
		s, err := anthropicsum.New(anthropicsum.Options{
			APIKey: apiKey, BaseURL: baseURL, Model: model, InputTokens: inputTokens, Logger: e.logger,
		})
		if err != nil {
			return nil, usagef("--summarizer anthropic: %v", err)
		}
		return s, nil
	case summarizerOpenAI:
		s, err := openaisum.New(openaisum.Options{
			APIKey: apiKey, BaseURL: baseURL, Model: model, InputTokens: inputTokens, Logger: e.logger,
		})
		if err != nil {
			return nil, usagef("--summarizer openai: %v", err)
		}
		return s, nil
	}
	return nil, usagef("invalid --summarizer %q: want extractive, anthropic or openai", name)
}
