package compact

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens"
)

// Reason says why a result was not compacted, or why a compacted one is
// still not below the threshold. It is empty when the result is compacted
// and below the threshold.
type Reason string

// Reasons reported in Result.Reason.
const (
	// ReasonEmpty: the list has no messages.
	ReasonEmpty Reason = "empty"
	// ReasonBelowThreshold: the tokens are below the threshold and Force is
	// off; nothing needed doing.
	ReasonBelowThreshold Reason = "below_threshold"
	// ReasonNothingToCompact: the middle is empty (head and tail cover the
	// whole list), or holds nothing but a previous summary. Compaction
	// cannot help; when the list is over the threshold, its last messages
	// alone are too large for the window.
	ReasonNothingToCompact Reason = "nothing_to_compact"
	// ReasonSummarizerFailed: every attempt failed; the original list is
	// returned.
	ReasonSummarizerFailed Reason = "summarizer_failed"
	// ReasonRetainedOverThreshold: compacted, but the head and tail alone
	// reach the threshold, so no summary can bring the list below it.
	// Compacting again will not help: the caller must shrink the tail
	// itself (offload, prune) or give up, not loop.
	ReasonRetainedOverThreshold Reason = "retained_over_threshold"
	// ReasonSummaryOverThreshold: compacted, but the summary was too long
	// to bring the list below the threshold.
	ReasonSummaryOverThreshold Reason = "summary_over_threshold"
)

// Stats are the statistics of one compaction (seed 002 F-008). They are all
// zero when nothing was compacted.
type Stats struct {
	// OriginalTokenCount is the tokens of the input list.
	OriginalTokenCount int `json:"original_token_count"`
	// CompactedTokenCount is the tokens of the returned list.
	CompactedTokenCount int `json:"compacted_token_count"`
	// CompactionRatio is CompactedTokenCount / OriginalTokenCount.
	CompactionRatio float64 `json:"compaction_ratio"`
	// CompactedMessageCount is the number of messages summarized (the
	// middle).
	CompactedMessageCount int `json:"compacted_message_count"`
	// RetainedMessageCount is the number of messages kept (head and tail).
	RetainedMessageCount int `json:"retained_message_count"`
}

// Result is the outcome of Compact.
type Result struct {
	// Messages is the list to use from now on: head + the summary message
	// + tail when compacted, else the input list itself (with its capacity
	// cut, so appending to it never writes into the caller's array). Never
	// nil.
	Messages []agentctx.Message `json:"messages"`
	// Compacted reports whether the middle was replaced by a summary.
	Compacted bool `json:"compacted"`
	// Stats are the statistics; zero when not compacted.
	Stats Stats `json:"stats"`
	// Archive is the absolute path of the file holding the middle's
	// original messages; empty when none was written. An archive written
	// before a summary that then failed stays, and is reported here.
	Archive string `json:"archive"`
	// ArchiveID is the archive's stable name (see Archived): the file path
	// for file archives, an artifact id for archives kept in a workspace.
	ArchiveID string `json:"-"`
	// ArchiveBytes is the archive's size.
	ArchiveBytes int `json:"-"`
	// Summary is the content of the summary message; empty when not
	// compacted.
	Summary string `json:"summary"`
	// Head and End locate the summarized messages in the input:
	// msgs[Head:End] were replaced by the summary, which is Messages[Head].
	// Both are 0 when nothing was compacted.
	Head int `json:"-"`
	End  int `json:"-"`

	// Tokens is the token count of Messages, plus Options.ReservedTokens.
	Tokens int `json:"tokens"`
	// ThresholdTokens is Limit × Threshold, the count at which compaction
	// is due.
	ThresholdTokens int `json:"threshold_tokens"`
	// BelowThreshold reports whether Messages is below the threshold, so
	// that the next check will not ask for compaction again.
	BelowThreshold bool `json:"below_threshold"`
	// Reason says why nothing was compacted, or why a compacted list is
	// still over the threshold; empty otherwise.
	Reason Reason `json:"reason"`
	// Attempts is the number of summarizer calls made (0 when none was
	// needed).
	Attempts int `json:"attempts"`
	// SummaryError is, when the summarizer failed (Reason
	// ReasonSummarizerFailed), its last error on one line; empty otherwise.
	SummaryError string `json:"summary_error,omitempty"`
}

// CheckResult is the outcome of Check.
type CheckResult struct {
	// ShouldCompact reports whether Tokens ≥ ThresholdTokens (and the list
	// is not empty).
	ShouldCompact bool `json:"should_compact"`
	// Tokens is the token count of the list, plus Options.ReservedTokens.
	Tokens int `json:"tokens"`
	// ThresholdTokens is Limit × Threshold.
	ThresholdTokens int `json:"threshold_tokens"`
}

// Check counts msgs and compares the count with the threshold (seed 002
// F-002): compaction is due when tokens ≥ Limit × Threshold; an empty list
// never is. It is pure.
func Check(msgs []agentctx.Message, opts Options) (CheckResult, error) {
	if err := opts.Validate(); err != nil {
		return CheckResult{}, err
	}
	o := opts.resolved()
	total := o.messageCounter().Count(msgs) + o.ReservedTokens
	thr := o.thresholdTokens()
	return CheckResult{ShouldCompact: len(msgs) > 0 && total >= thr, Tokens: total, ThresholdTokens: thr}, nil
}

// ShouldCompact reports whether msgs has reached the threshold (seed 002
// F-002): tokens ≥ Limit × Threshold, equality included; an empty list
// never has. Invalid options are treated as their defaults.
func ShouldCompact(msgs []agentctx.Message, opts Options) bool {
	if len(msgs) == 0 {
		return false
	}
	o := opts.resolved()
	return o.messageCounter().Count(msgs)+max(o.ReservedTokens, 0) >= o.thresholdTokens()
}

// Compact summarizes the middle of msgs when its tokens reach the threshold
// (or always, with Force), and returns head + {role: "user", content:
// summary} + tail as a new list (seed 002). msgs is never modified.
//
// In order: the list is counted; below the threshold nothing is done
// (ReasonBelowThreshold). It is split (see Split); an empty middle, or one
// that holds only a previous summary, is left alone
// (ReasonNothingToCompact). The middle is archived (see WriteArchive) unless
// NoArchive is set; a failed archive is logged and compaction goes on,
// unless ArchiveRequired makes it an error. The summarizer is called, and
// called again after a failure or an empty answer up to MaxRetries times,
// with Backoff between attempts; every failure is logged. When the last
// attempt fails, the original list comes back with Compacted false
// (ReasonSummarizerFailed), or, with SummaryRequired, an error.
//
// The result says whether the new list is below the threshold and, when it
// is not, why (see Reason): a caller that compacts before every model
// request can tell when compaction cannot help instead of compacting again.
//
// Compact returns an error for invalid options, for a required archive or
// summary that failed, and when ctx is done (a cancelled summary is not
// retried).
func Compact(ctx context.Context, msgs []agentctx.Message, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := opts.resolved()
	log := o.Logger

	mc := o.messageCounter()
	counts, total := countEach(mc, msgs)
	thr := o.thresholdTokens()
	reserved := o.ReservedTokens
	res := &Result{
		Messages:        msgs[:len(msgs):len(msgs)],
		Tokens:          total + reserved,
		ThresholdTokens: thr,
		BelowThreshold:  total+reserved < thr,
	}
	if res.Messages == nil {
		res.Messages = []agentctx.Message{}
	}
	switch {
	case len(msgs) == 0:
		res.Reason = ReasonEmpty
		return res, nil
	case total+reserved < thr && !o.Force:
		res.Reason = ReasonBelowThreshold
		return res, nil
	}

	h, t := split(msgs, counts, o.tailTokens())
	if o.SummarizeAll {
		t = len(msgs)
	}
	middle := msgs[h:t:t]
	if len(middle) == 0 || (len(middle) == 1 && IsSummary(middle[0])) {
		res.Reason = ReasonNothingToCompact
		if !res.BelowThreshold {
			log.Warn("compact: nothing to compact; the retained messages alone reach the threshold",
				"tokens", total+reserved, "threshold_tokens", thr, "messages", len(msgs))
		}
		return res, nil
	}

	req, err := summaryRequest(ctx, o, msgs, h, t, res)
	if err != nil {
		return nil, err
	}
	summary, attempts, err := summarize(ctx, o, req)
	if err != nil && o.Fallback != nil {
		var fell bool
		summary, fell, err = fallBack(ctx, o, req, err)
		if fell {
			attempts++
		}
	}
	res.Attempts = attempts
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("compact: %w", cerr)
		}
		if o.SummaryRequired {
			return nil, fmt.Errorf("compact: summarizer failed after %d attempts: %w", attempts, err)
		}
		log.Error("compact: summarizer failed; returning the original messages",
			"attempts", attempts, "err", err)
		res.Reason = ReasonSummarizerFailed
		res.SummaryError = strings.Join(strings.Fields(err.Error()), " ")
		return res, nil
	}
	summary = WithPointers(summary, req.Pointers)
	if o.SummarizeAll {
		summary = withLatestResults(summary, msgs[len(msgs)-1])
	}
	compacted(res, o, mc, msgs, counts, h, t, summary)
	return res, nil
}

// summaryRequest returns the summarizer's request for the middle
// msgs[h:t]: its messages (as o.Originals gives them back, when set),
// archived by archiveMiddle, and, with o.MaxPointers, the pointers to
// keep in the summary.
func summaryRequest(ctx context.Context, o Options, msgs []agentctx.Message, h, t int, res *Result) (Request, error) {
	source := msgs[h:t:t]
	if o.Originals != nil {
		source = o.Originals(msgs, h, t)
	}
	req := Request{Messages: source}
	if o.Facts != nil {
		if f := o.Facts(msgs, h, t); len(f) == len(source) {
			req.Facts = f
		}
	}
	archived, err := archiveMiddle(ctx, o, agentctx.Conversation{Messages: source, Facts: req.Facts}, res, &req)
	if err != nil {
		return Request{}, err
	}
	if o.MaxPointers > 0 {
		var extra []Pointer
		if o.Pointers != nil {
			extra = o.Pointers(msgs, h, t)
		}
		req.Pointers = capPointers(pointersOf(source, extra, archived), o.MaxPointers)
	}
	return req, nil
}

// archiveMiddle archives source, the middle's messages, unless
// o.NoArchive: it records the archive in res and req and returns the
// pointer to it (nil when nothing was archived). A failed archive is
// logged and compaction goes on, unless o.ArchiveRequired.
func archiveMiddle(ctx context.Context, o Options, conv agentctx.Conversation, res *Result, req *Request) (*Pointer, error) {
	if o.NoArchive {
		return nil, nil
	}
	archiver := o.Archiver
	if archiver == nil {
		archiver = FileArchiver{Dir: o.Dir, Now: o.Now, Sync: o.SyncArchive}
	}
	source := conv.Messages
	var a Archived
	var err error
	if ca, ok := archiver.(ConversationArchiver); ok && conv.Facts != nil {
		a, err = ca.ArchiveConversation(ctx, o.SessionID, conv)
	} else {
		a, err = archiver.Archive(ctx, o.SessionID, source)
	}
	switch {
	case err == nil:
		res.Archive, res.ArchiveID, res.ArchiveBytes, req.Archive = a.Path, a.ID, a.Bytes, a.ID
		archived := &Pointer{Kind: PointerArchive, Path: a.Path, Bytes: a.Bytes, Messages: len(source)}
		if a.ID != a.Path {
			archived.ArtifactID = a.ID
		}
		o.Logger.Info("compact: archived the middle", "archive", a.ID, "messages", len(source))
		return archived, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case o.ArchiveRequired:
		return nil, err
	}
	o.Logger.Error("compact: archive failed; compacting anyway", "err", err)
	return nil, nil
}

// compacted fills res with the list whose middle msgs[h:t] is replaced by
// summary, its counts (counts are msgs'), and why it is still at or over
// the threshold, if it is; and logs it.
func compacted(res *Result, o Options, mc *tokens.MessageCounter, msgs []agentctx.Message, counts []int, h, t int, summary string) {
	total, reserved, thr := sum(counts), o.ReservedTokens, res.ThresholdTokens
	sm := agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(summary))
	out := make([]agentctx.Message, 0, h+1+len(msgs)-t)
	out = append(out, msgs[:h]...)
	out = append(out, sm)
	out = append(out, msgs[t:]...)

	retained := sum(counts[:h]) + sum(counts[t:])
	after := retained + mc.CountMessage(sm)
	res.Messages = out
	res.Compacted = true
	res.Head, res.End = h, t
	res.Summary = summary
	res.Tokens = after + reserved
	res.BelowThreshold = after+reserved < thr
	res.Stats = Stats{
		OriginalTokenCount:    total,
		CompactedTokenCount:   after,
		CompactionRatio:       ratio(after, total),
		CompactedMessageCount: t - h,
		RetainedMessageCount:  h + len(msgs) - t,
	}
	switch {
	case res.BelowThreshold:
	case retained+reserved >= thr:
		res.Reason = ReasonRetainedOverThreshold
	default:
		res.Reason = ReasonSummaryOverThreshold
	}
	attrs := []any{"original_tokens", total, "compacted_tokens", after,
		"compacted_messages", t - h, "retained_messages", res.Stats.RetainedMessageCount}
	if res.Reason != "" {
		o.Logger.Warn("compact: compacted, but still at or over the threshold", append(attrs, "reason", string(res.Reason), "threshold_tokens", thr)...)
	} else {
		o.Logger.Info("compact: compacted", attrs...)
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// summarize calls the summarizer until it gives a non-empty summary or the
// attempts run out, and returns the summary, the number of attempts and the
// last error.
func summarize(ctx context.Context, o Options, req Request) (string, int, error) {
	var last error
	attempts := 1 + o.MaxRetries
	for a := 1; a <= attempts; a++ {
		s, err := attempt(ctx, o, req)
		if err == nil {
			return s, a, nil
		}
		last = err
		if ctx.Err() != nil {
			level := slog.LevelWarn
			if errors.Is(ctx.Err(), context.Canceled) {
				level = slog.LevelInfo // the caller went away: not a fault
			}
			o.Logger.Log(ctx, level, "compact: summary cancelled", "attempt", a, "err", err)
			return "", a, err
		}
		retry := a < attempts && retryable(err)
		o.Logger.Warn("compact: summary attempt failed", "attempt", a, "of", attempts, "retry", retry, "err", err)
		if !retry {
			return "", a, err
		}
		if err := sleep(ctx, wait(o, a, err)); err != nil {
			return "", a, err
		}
	}
	return "", attempts, last
}

// fallBack writes the summary with o.Fallback after the attempts of
// o.Summarizer failed with err, on a context of its own (FallbackContext):
// the summary, whether Fallback was called, and the error (err, with the
// fallback's own when it failed too). A caller gone (ctx cancelled) gets
// no fallback.
func fallBack(ctx context.Context, o Options, req Request, err error) (string, bool, error) {
	fctx, cancel, cerr := FallbackContext(ctx, err, o.FallbackTimeout)
	defer cancel()
	if cerr != nil {
		return "", false, err
	}
	o.Logger.Warn("compact: the summary failed; writing the fallback summary", "err", err)
	s, ferr := o.Fallback.Summarize(fctx, req)
	s = strings.TrimSpace(s)
	if ferr == nil && s == "" {
		ferr = ErrEmptySummary
	}
	if ferr != nil {
		return "", true, fmt.Errorf("%w; the fallback summary failed too: %w", err, ferr)
	}
	return s, true, nil
}

// attempt makes one summarizer call, bounded by AttemptTimeout.
func attempt(ctx context.Context, o Options, req Request) (s string, err error) {
	if o.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.AttemptTimeout)
		defer cancel()
	}
	start := time.Now()
	s, err = o.Summarizer.Summarize(ctx, req)
	if err == nil {
		s = strings.TrimSpace(s)
		if s == "" {
			err = ErrEmptySummary
		}
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	o.Logger.Debug("compact: summary attempt", "took", time.Since(start), "chars", len(s), "ok", err == nil)
	return s, err
}

// retryable reports whether a failure may succeed when tried again: every
// failure except an APIError that says otherwise (a 400 or 401 answer).
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Retryable()
	}
	return true
}

// wait is the pause before retry n: the backoff, or the provider's
// Retry-After when longer, at most maxWait.
func wait(o Options, retry int, err error) time.Duration {
	d := o.Backoff(retry)
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > d {
		d = ae.RetryAfter
	}
	return min(max(d, 0), maxWait)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// LatestResultsTitle heads the section a summary of everything
// (Options.SummarizeAll) ends with when the list ended on tool results.
const LatestResultsTitle = "Latest tool results"

// withLatestResults returns summary followed by the tool results last
// holds, as the list sent them (a stored result as its reference, a
// cleared one as its placeholder): a summary that replaces the whole list
// replaces the results the model is about to act on, which no summary
// carries whole (the value the next command needs may sit in the middle
// of a long output). Without the section the model answers the summary
// without the output of the call it made last. Text content is written
// as it is; block content as its text blocks.
func withLatestResults(summary string, last agentctx.Message) string {
	var b strings.Builder
	for r := range agentctx.ToolResults([]agentctx.Message{last}) {
		text := r.Content.Text()
		if !r.Content.IsText() {
			var parts []string
			for _, bl := range r.Content.Blocks() {
				if bl.Type == agentctx.BlockText {
					parts = append(parts, bl.Text)
				}
			}
			text = strings.Join(parts, "\n")
		}
		if b.Len() == 0 {
			b.WriteString("## " + LatestResultsTitle + "\n\nThe conversation stopped at these results of the last tool calls, as they were sent:\n")
		}
		fmt.Fprintf(&b, "\n<tool_result tool_use_id=%q>\n%s\n</tool_result>\n", r.ID, strings.TrimRight(text, "\n"))
	}
	if b.Len() == 0 {
		return summary
	}
	return strings.TrimRight(summary, " \n") + "\n\n" + strings.TrimRight(b.String(), "\n")
}
