package compact

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens"
)

// Defaults of seed 002 (SPEC §6 and §8).
const (
	DefaultLimit      = 200_000    // context window, tokens
	DefaultThreshold  = 0.92       // compact at ≥ 92% of the limit
	DefaultTailRatio  = 0.10       // keep ≥ 10% of the limit as the tail
	DefaultMaxRetries = 2          // retries after a failed summary
	DefaultDir        = ".offload" // archive directory
	DefaultSessionID  = "default"  // archive subdirectory
)

// DefaultBackoff is the wait before retry n (1-based): 1s, 2s, 4s, ...,
// at most 30s.
func DefaultBackoff(retry int) time.Duration {
	if retry < 1 {
		retry = 1
	}
	if retry > 5 {
		return 30 * time.Second
	}
	return time.Second << (retry - 1)
}

// maxWait bounds any wait between attempts, whatever a provider's
// Retry-After asks for.
const maxWait = time.Minute

// ErrInvalidOption is matched (errors.Is) by the error for an option out of
// its range.
var ErrInvalidOption = errors.New("compact: invalid option")

// Options configure ShouldCompact, Check, Split and Compact. The zero value
// means the defaults of seed 002: a 200,000-token window, compaction at 92%,
// a tail of 10%, two retries, the extractive summarizer, o200k_base counts,
// and archives under .offload/default.
type Options struct {
	// Limit is the context window in tokens. Zero means DefaultLimit.
	Limit int
	// Threshold is the trigger ratio: compaction is due when the tokens
	// reach Limit × Threshold (≥). Zero means DefaultThreshold.
	Threshold float64
	// ReservedTokens are tokens sent with every request besides the
	// messages (a top-level system prompt, tool definitions). They count
	// toward the threshold, not toward the tail budget or Stats.
	ReservedTokens int
	// TailRatio sets the tail budget, Limit × TailRatio tokens. Zero means
	// DefaultTailRatio; a negative value means a budget of zero (the tail is
	// then the last message, plus what tool pairing adds).
	TailRatio float64
	// SummarizeAll summarizes everything after the head: no tail is kept,
	// and the summary is the last message of the list. A caller whose list
	// ends in a message that may not follow a changed prefix (the last
	// assistant message of an open tool loop with signed thinking) sends
	// the summary alone, which the model answers afresh.
	SummarizeAll bool

	// Counter counts the tokens of text. Nil means tokens.O200kBase().
	Counter tokens.Counter
	// MessageCounter counts messages (SPEC §2). Nil means a new one over
	// Counter for each call. An agent loop that compacts before every
	// request can keep one here: its cache then spares re-tokenizing the
	// messages counted in earlier calls. Counter is not used when it is set.
	MessageCounter *tokens.MessageCounter
	// Summarizer writes the summary. Nil means Extractive{} (offline,
	// deterministic).
	Summarizer Summarizer

	// MaxRetries is the number of retries after a failed summary (an error
	// or an empty answer). Zero means DefaultMaxRetries; a negative value
	// means none (one attempt).
	MaxRetries int
	// Backoff returns the wait before retry n (1-based). Nil means
	// DefaultBackoff. A provider's Retry-After (see APIError) is honoured
	// when longer, up to one minute.
	Backoff func(retry int) time.Duration
	// AttemptTimeout bounds each summarizer call. Zero means no bound other
	// than the context's.
	AttemptTimeout time.Duration
	// Fallback, when set, writes the summary once every attempt of
	// Summarizer failed (an error, an empty answer or a timeout), on a
	// context of its own (FallbackContext, bounded by FallbackTimeout), so
	// that a summary that timed out, even on ctx's deadline, is still
	// followed by one; not when ctx was cancelled (the caller went away).
	// Nil means none: the original list comes back
	// (ReasonSummarizerFailed). A caller whose list is over the window,
	// which the provider would refuse uncompacted, sets Extractive{}.
	Fallback Summarizer
	// FallbackTimeout bounds Fallback. Zero means DefaultFallbackTimeout.
	FallbackTimeout time.Duration
	// SummaryRequired makes a summary that still fails after the retries
	// (and Fallback) an error (wrapping the last failure) instead of an
	// uncompacted result.
	SummaryRequired bool

	// Force compacts even below the threshold (the middle must still be
	// non-empty).
	Force bool

	// Dir is the archive directory. Empty means DefaultDir.
	Dir string
	// SessionID names the archive subdirectory (made safe with
	// fsutil.SafeName). Empty means DefaultSessionID.
	SessionID string
	// NoArchive skips writing the archive.
	NoArchive bool
	// Archiver keeps the middle before it is summarized. Nil means a
	// FileArchiver over Dir, Now and SyncArchive (seed 002 file names).
	Archiver Archiver
	// Originals, if set, returns the messages that msgs[h:t] stand for
	// when the list given to Compact is an edited view of a history (a
	// pipeline's pruned and offloaded list): they are archived and
	// summarized in place of msgs[h:t], so that a summary describes what
	// really happened and not the placeholders. It must not modify msgs.
	Originals func(msgs []agentctx.Message, h, t int) []agentctx.Message
	// Facts, if set, returns the facts of the messages the middle
	// msgs[h:t] stands for (as Originals gives them, else msgs[h:t]),
	// index for index, or nil when they are not known: an encoding they
	// hold is archived and handed to the summarizer (Request.Facts) as it
	// is, not written again. It must not modify msgs.
	Facts func(msgs []agentctx.Message, h, t int) []agentctx.Facts
	// Pointers, if set, returns where the originals of the tool results in
	// msgs[h:t] are stored (their artifact ids, and their files' paths
	// when there are files), for the summary's pointer section (see
	// PointersTitle); results it leaves out get no line. ToolName and Input
	// may be left empty: Compact fills them from the calls in msgs[h:t]
	// (by ToolCallID). It must not modify msgs. The pointers of earlier
	// summaries in msgs[h:t], of the files its results say the client
	// saved output to, and of the archive are added by Compact.
	Pointers func(msgs []agentctx.Message, h, t int) []Pointer
	// MaxPointers bounds the pointers of a summary. Zero means
	// DefaultMaxPointers; a negative value means none (no pointer
	// section). Past the bound the oldest results go first, then the
	// oldest archives: each archive holds the summary before it, with its
	// own pointers, so nothing becomes unreachable.
	MaxPointers int
	// ArchiveRequired makes a failed archive an error that stops compaction
	// before anything is summarized. By default (seed 002 F-006) the
	// failure is logged and compaction goes on.
	ArchiveRequired bool
	// SyncArchive fsyncs the archive before it becomes visible.
	SyncArchive bool

	// Now is the clock for archive names. Nil means time.Now.
	Now func() time.Time
	// Logger receives a line per failed attempt, per archive and per
	// compaction. Nil discards.
	Logger *slog.Logger
}

// Validate reports an option out of range, wrapping ErrInvalidOption.
func (o Options) Validate() error {
	switch {
	case o.Limit < 0:
		return fmt.Errorf("%w: Limit %d is negative", ErrInvalidOption, o.Limit)
	case o.ReservedTokens < 0:
		return fmt.Errorf("%w: ReservedTokens %d is negative", ErrInvalidOption, o.ReservedTokens)
	case math.IsNaN(o.Threshold) || math.IsInf(o.Threshold, 0) || o.Threshold < 0:
		return fmt.Errorf("%w: Threshold %v must be a positive ratio", ErrInvalidOption, o.Threshold)
	case math.IsNaN(o.TailRatio) || math.IsInf(o.TailRatio, 0):
		return fmt.Errorf("%w: TailRatio %v is not a number", ErrInvalidOption, o.TailRatio)
	case o.AttemptTimeout < 0:
		return fmt.Errorf("%w: AttemptTimeout %s is negative", ErrInvalidOption, o.AttemptTimeout)
	case o.FallbackTimeout < 0:
		return fmt.Errorf("%w: FallbackTimeout %s is negative", ErrInvalidOption, o.FallbackTimeout)
	}
	return nil
}

// resolved returns o with every default filled in. Out-of-range values fall
// back to their defaults (Validate reports them).
func (o Options) resolved() Options {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if !(o.Threshold > 0) || math.IsInf(o.Threshold, 0) {
		o.Threshold = DefaultThreshold
	}
	switch {
	case math.IsNaN(o.TailRatio) || math.IsInf(o.TailRatio, 0) || o.TailRatio == 0:
		o.TailRatio = DefaultTailRatio
	case o.TailRatio < 0:
		o.TailRatio = 0
	}
	if o.Counter == nil {
		o.Counter = tokens.O200kBase()
	}
	if o.Summarizer == nil {
		o.Summarizer = Extractive{}
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = DefaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.MaxPointers == 0 {
		o.MaxPointers = DefaultMaxPointers
	}
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.SessionID == "" {
		o.SessionID = DefaultSessionID
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// thresholdTokens is Limit × Threshold rounded up: a count is due when it
// reaches it. Products that are integers up to floating-point noise
// (200,000 × 0.92) are taken as those integers.
func (o Options) thresholdTokens() int { return ceilRatio(o.Limit, o.Threshold) }

// ThresholdTokens returns the count at which compaction is due, Limit ×
// Threshold with the defaults filled in (what Check reports).
func (o Options) ThresholdTokens() int { return o.resolved().thresholdTokens() }

// TailTokens returns the tail budget, Limit × TailRatio with the defaults
// filled in: the tokens of recent messages a compaction keeps.
func (o Options) TailTokens() int { return o.resolved().tailTokens() }

// tailTokens is the tail budget, Limit × TailRatio rounded up.
func (o Options) tailTokens() int { return ceilRatio(o.Limit, o.TailRatio) }

func ceilRatio(limit int, ratio float64) int {
	x := float64(limit) * ratio
	if r := math.Round(x); math.Abs(x-r) < 1e-9*math.Max(1, r) {
		x = r
	}
	x = math.Ceil(x)
	if x >= math.MaxInt64 {
		return math.MaxInt
	}
	return int(x)
}
