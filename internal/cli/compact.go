package cli

import (
	"fmt"
	"github.com/agentctx/agentctx/internal/secret"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/anthropicsum"
	"github.com/agentctx/agentctx/compact/openaisum"
	"github.com/agentctx/agentctx/tokens"
)

// Summarizer names accepted by --summarizer.
const (
	summarizerExtractive = "extractive"
	summarizerAnthropic  = "anthropic"
	summarizerOpenAI     = "openai"
)

func newCompactCmd(e *env) *cobra.Command {
	var (
		dir, session         string
		limit                int
		threshold, tailRatio float64
		maxRetries           int
		summarizer, model    string
		apiKey, baseURL      string
		timeout, backoff     time.Duration
		inputTokens          int
		check, force, strict bool
		noArchive            bool
		messagesOnly         bool
	)
	cmd := &cobra.Command{
		Use:   "compact [FILE]",
		Short: "Summarize the middle of a long conversation and archive the originals",
		Long: `compact replaces the middle of a conversation with a summary when its tokens
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
logged and compaction goes on, unless --strict.`,
		Example: `  agentctx compact --check session.jsonl
  agentctx compact --force --limit 14000 examples/session.json
  agentctx compact --limit 100000 --session s1 session.jsonl > compacted.json
  agentctx compact --summarizer openai --base-url http://localhost:11434/v1 --model qwen3:8b --input-tokens 24000 < messages.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkRatios(threshold, tailRatio); err != nil {
				return err
			}
			if check {
				if err := contradicts(cmd, "check", "force", "strict", "no-archive", "dir", "summarizer", "model", "api-key", "base-url",
					"max-retries", "timeout", "backoff", "input-tokens", "messages-only"); err != nil {
					return err
				}
			}
			if noArchive {
				if err := contradicts(cmd, "no-archive", "dir"); err != nil {
					return err
				}
			}
			switch {
			case limit < 1:
				return usagef("invalid --limit %d: must be at least 1", limit)
			case maxRetries < 0:
				return usagef("invalid --max-retries %d: must not be negative", maxRetries)
			case timeout < 0:
				return usagef("invalid --timeout %s: must not be negative", timeout)
			case backoff < 0:
				return usagef("invalid --backoff %s: must not be negative", backoff)
			case inputTokens < 0:
				return usagef("invalid --input-tokens %d: must not be negative", inputTokens)
			case session == "":
				return usagef("invalid --session: must not be empty")
			case dir == "" && !noArchive:
				return usagef("invalid --dir: must not be empty")
			}
			opts := compact.Options{
				Limit:           limit,
				Threshold:       threshold,
				TailRatio:       tailRatio,
				MaxRetries:      maxRetries,
				AttemptTimeout:  timeout,
				Backoff:         doubling(backoff),
				Force:           force,
				Dir:             dir,
				SessionID:       session,
				NoArchive:       noArchive,
				ArchiveRequired: strict,
				SummaryRequired: strict,
				Logger:          e.logger,
			}
			// On the command line 0 is literal; in Options it means the default.
			if tailRatio == 0 {
				opts.TailRatio = -1
			}
			if maxRetries == 0 {
				opts.MaxRetries = -1
			}
			if !check {
				s, err := newSummarizer(e, summarizer, model, apiKey, baseURL, inputTokens)
				if err != nil {
					return err
				}
				opts.Summarizer = s
			}

			doc, err := e.readConversation(cmd.Context(), "compact", args)
			if err != nil {
				return err
			}
			// A request body's top-level system prompt and tool
			// definitions are sent with the messages: they count toward
			// the threshold.
			opts.ReservedTokens = tokens.NewMessageCounter(tokens.MessageOptions{CacheSize: -1, Logger: e.logger}).CountRequestExtras(doc)
			if check {
				res, err := compact.Check(doc.Messages, opts)
				if err != nil {
					return err // compact.ErrInvalidOption: bad usage (ExitCode)
				}
				return e.writeJSON(cmd.Context(), res)
			}
			removeStaleTemp(dir, session)
			res, err := compact.Compact(cmd.Context(), doc.Messages, opts)
			if err != nil {
				return err
			}
			if res.Reason == compact.ReasonSummarizerFailed {
				fmt.Fprintf(e.s.Err, "agentctx: warning: the summarizer failed after %d attempt(s): %s; the messages are printed uncompacted (--strict makes it fatal)\n",
					res.Attempts, secret.Scrub(res.SummaryError, apiKey))
			}
			if res.Compacted && res.Archive == "" && !noArchive {
				fmt.Fprintf(e.s.Err, "agentctx: warning: the summarized messages were not archived in %s (-v tells why; --strict makes it fatal)\n", dir)
			}
			return e.writeEveryMessage(cmd.Context(), doc, res.Messages, res, messagesOnly)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", compact.DefaultDir, "archive directory (created if missing)")
	f.StringVar(&session, "session", compact.DefaultSessionID, "session id: the archive subdirectory")
	f.IntVar(&limit, "limit", compact.DefaultLimit, "context window, in tokens")
	f.Float64Var(&threshold, "threshold", compact.DefaultThreshold, "compact when the tokens reach this ratio of --limit")
	f.Float64Var(&tailRatio, "tail-ratio", compact.DefaultTailRatio, "keep the most recent messages worth this ratio of --limit")
	f.IntVar(&maxRetries, "max-retries", compact.DefaultMaxRetries, "retries after a failed summary (0: none)")
	f.StringVar(&summarizer, "summarizer", summarizerExtractive, "extractive, anthropic or openai")
	f.StringVar(&model, "model", "", "model for --summarizer anthropic or openai (default "+anthropicsum.DefaultModel+" / "+openaisum.DefaultModel+")")
	f.StringVar(&apiKey, "api-key", "", "API key for the summarizer (default $ANTHROPIC_API_KEY / $OPENAI_API_KEY)")
	f.StringVar(&baseURL, "base-url", "", "API base URL for the summarizer (default $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL)")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "bound on each summarizer attempt (0: none)")
	f.DurationVar(&backoff, "backoff", time.Second, "wait before the first retry, doubled for each next one (up to 30s)")
	f.IntVar(&inputTokens, "input-tokens", compact.DefaultInputTokens, "most tokens of conversation per model call; larger middles are summarized in parts")
	f.BoolVar(&check, "check", false, "only report whether compaction is due")
	f.BoolVar(&force, "force", false, "compact even below the threshold")
	f.BoolVar(&strict, "strict", false, "fail (exit 1) when the archive or the summary fails")
	f.BoolVar(&noArchive, "no-archive", false, "do not archive the compacted messages")
	f.BoolVar(&messagesOnly, "messages-only", false, "print the messages without the other members of a request body (model, system, tools, ...)")
	return cmd
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
