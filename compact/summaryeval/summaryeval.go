// Package summaryeval scores the summaries a compact.Summarizer writes for
// real transcripts: each conversation is split as Compact would split it
// at a given limit (head, middle, tail), its middle is summarized (even when
// the conversation is below the trigger: the summary is forced), and the
// summary is scored against the middle and the tail with
// compact.ScoreSummary: the share of the paths and identifiers that the
// middle and the tail share, the user's requests, the errors, the size in
// tokens, and noise.
//
// It is what `agentctx summary-eval` runs; BENCHMARKS.md holds its table
// for the shared transcripts.
package summaryeval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/tokens"
	"github.com/agentctx/agentctx/transcript"
)

// Defaults of Options.
const (
	// DefaultLimit is the context window the transcripts are split for.
	DefaultLimit = 100_000
)

// Targets of issue 14, which Row.Met checks.
const (
	TargetPaths       = 0.95 // share of shared paths kept
	TargetIdentifiers = 0.70 // share of shared identifiers kept
)

// Options configure Evaluate. The zero value splits at DefaultLimit with
// the default tail ratio and summarizes with compact.Extractive{}.
type Options struct {
	// Limit is the context window, in tokens. Zero means DefaultLimit.
	Limit int
	// TailRatio is compact.Options.TailRatio. Zero means its default.
	TailRatio float64
	// Summarizer writes the summaries. Nil means compact.Extractive{}.
	Summarizer compact.Summarizer
	// MaxTokens is the size a summary must fit. Zero means
	// compact.DefaultSummaryTokens.
	MaxTokens int
	// Counter counts tokens. Nil means tokens.O200kBase().
	Counter tokens.Counter
	// KeepSummaries puts each summary in its Row.
	KeepSummaries bool
	// Read says how transcripts are read. Its zero value reads the live
	// context of a Claude Code session Claude Code compacted itself; the
	// command reads sessions whole (transcript.ReadOptions.WholeHistory), as
	// they went.
	Read transcript.ReadOptions
	// Now is the clock for the time a summary takes. Nil means time.Now.
	Now func() time.Time
}

// Row is the score of one conversation.
type Row struct {
	// File is the transcript's base name; Conversation its index in the
	// file (an OpenHands output.jsonl holds several).
	File         string `json:"file"`
	Conversation int    `json:"conversation"`
	Messages     int    `json:"messages"` // messages in the conversation
	// MiddleMessages and TailMessages are the sizes of the split.
	MiddleMessages int `json:"middle_messages"`
	TailMessages   int `json:"tail_messages"`
	// MiddleTokens is the size of what was summarized.
	MiddleTokens int `json:"middle_tokens"`
	// Forced reports a conversation below the trigger, summarized anyway.
	Forced bool `json:"forced"`
	// Score is the summary's score.
	Score compact.SummaryScore `json:"score"`
	// Elapsed is the time the summary took.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Summary is the summary, with Options.KeepSummaries.
	Summary string `json:"summary,omitempty"`
	// Err is the summarizer's error, if any.
	Err string `json:"error,omitempty"`
	// Notice is what the reader left out of the file or found worth
	// knowing (agentctx.Document.Notice: records skipped, an incomplete
	// last line, compact boundaries); empty when nothing.
	Notice string `json:"notice,omitempty"`
}

// Met reports whether the row meets the targets of issue 14: paths and
// identifiers kept, every request kept, within maxTokens, no noise, no
// error.
func (r Row) Met(maxTokens int) bool {
	if maxTokens <= 0 {
		maxTokens = compact.DefaultSummaryTokens
	}
	s := r.Score
	return r.Err == "" && s.Paths.Share() >= TargetPaths && s.Identifiers.Share() >= TargetIdentifiers &&
		s.Requests.Kept == s.Requests.Total && s.Tokens <= maxTokens && len(s.Noise) == 0
}

// ErrNoTranscripts is returned when the paths name no transcript.
var ErrNoTranscripts = errors.New("summaryeval: no transcripts")

// Evaluate scores every conversation of the transcripts named by paths:
// files, or directories whose .json and .jsonl files are read (in name
// order). A file that is not a conversation document is an error.
func Evaluate(ctx context.Context, paths []string, opts Options) ([]Row, error) {
	files, err := expand(paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, ErrNoTranscripts
	}
	var rows []Row
	for _, f := range files {
		doc, err := opts.Read.ReadFile(ctx, f, nil)
		if err != nil {
			return nil, fmt.Errorf("summaryeval: %s: %w", f, err)
		}
		for i, conv := range doc.Conversations() {
			r, err := EvaluateMessages(ctx, conv.Messages, opts)
			if err != nil {
				return nil, err
			}
			r.File, r.Conversation = filepath.Base(f), i
			if r.Notice = conv.Notice(); r.Notice == "" {
				r.Notice = doc.Notice()
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// EvaluateMessages scores the summary of one conversation's middle. A
// failed summary is reported in Row.Err; only ctx's end is an error.
func EvaluateMessages(ctx context.Context, msgs []agentctx.Message, opts Options) (Row, error) {
	o := opts
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Summarizer == nil {
		o.Summarizer = compact.Extractive{MaxTokens: o.MaxTokens, Counter: o.Counter}
	}
	if o.Counter == nil {
		o.Counter = tokens.O200kBase()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	copts := compact.Options{Limit: o.Limit, TailRatio: o.TailRatio, Counter: o.Counter}
	p := compact.Split(msgs, copts)
	chk, err := compact.Check(msgs, copts)
	if err != nil {
		return Row{}, err
	}
	r := Row{Messages: len(msgs), MiddleMessages: len(p.Middle), TailMessages: len(p.Tail), Forced: !chk.ShouldCompact}
	r.MiddleTokens = tokens.NewMessageCounter(tokens.MessageOptions{Counter: o.Counter}).Count(p.Middle)
	if len(p.Middle) == 0 {
		return r, nil
	}
	start := o.Now()
	summary, err := o.Summarizer.Summarize(ctx, compact.Request{Messages: p.Middle})
	r.Elapsed = o.Now().Sub(start)
	if err != nil {
		if ctx.Err() != nil {
			return Row{}, ctx.Err()
		}
		r.Err = err.Error()
		return r, nil
	}
	r.Score = compact.ScoreSummary(summary, p.Middle, p.Tail, compact.ScoreOptions{Counter: o.Counter})
	if o.KeepSummaries {
		r.Summary = summary
	}
	return r, nil
}

func expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("summaryeval: %w", err)
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("summaryeval: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.Type()&fs.ModeType == 0 && (strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl")) {
				out = append(out, filepath.Join(p, name))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// WriteMarkdown writes rows as a Markdown table: per conversation the
// split, the shares kept (kept/total), the tokens, the noise, and whether
// it meets the targets for summaries of at most maxTokens tokens (0:
// compact.DefaultSummaryTokens).
func WriteMarkdown(w io.Writer, rows []Row, maxTokens int) error {
	var b strings.Builder
	b.WriteString("| transcript | messages (middle/tail) | middle tokens | forced | paths kept | identifiers kept | requests kept | errors kept | summary tokens | noise | ms | targets | seen paths | seen identifiers |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		name := r.File
		if r.Conversation > 0 || strings.HasSuffix(name, "output.jsonl") {
			name = fmt.Sprintf("%s #%d", name, r.Conversation)
		}
		met := "met"
		if !r.Met(maxTokens) {
			met = "**missed**"
		}
		s := r.Score
		fmt.Fprintf(&b, "| %s | %d (%d/%d) | %d | %s | %s | %s | %s | %s | %d | %d | %.1f | %s | %s | %s |\n",
			name, r.Messages, r.MiddleMessages, r.TailMessages, r.MiddleTokens, yesNo(r.Forced),
			share(s.Paths), share(s.Identifiers), share(s.Requests), share(s.Errors), s.Tokens, len(s.Noise),
			float64(r.Elapsed.Microseconds())/1000, met, share(s.SeenPaths), share(s.SeenIdentifiers))
		if r.Notice != "" {
			fmt.Fprintf(&b, "| ↳ %s |||||||||||||\n", r.Notice)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func share(c compact.Coverage) string {
	if c.Total == 0 {
		return "– (0)"
	}
	return fmt.Sprintf("%.0f%% (%d/%d)", 100*c.Share(), c.Kept, c.Total)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
