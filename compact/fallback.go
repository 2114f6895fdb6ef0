package compact

import (
	"context"
	"errors"
	"time"
)

// DefaultFallbackTimeout is the default deadline of a fallback summary
// (see FallbackContext).
const DefaultFallbackTimeout = 10 * time.Second

// FirstTryContext returns the context a summarizer that falls back (a
// summary request, then Extractive when it fails) gives its first try:
// ctx bounded by d (none when d is zero or less) and, when ctx has a
// deadline, by three quarters of the time left before it, so that the
// fallback still has time to run before ctx's deadline. In the context
// of a fallback after a first try that timed out (FallbackContext) it
// returns a context already done (ErrFirstTrySkipped): a summarizer
// chained as the fallback of another goes straight to its own fallback
// rather than wait on another request to an upstream that did not
// answer.
func FirstTryContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Value(afterTimeoutKey{}) != nil {
		c, cancel := context.WithCancelCause(ctx)
		cancel(ErrFirstTrySkipped)
		return c, func() {}
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) * 3 / 4; d <= 0 || left < d {
			d = max(left, 0)
		}
	}
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// ErrFirstTrySkipped is the cause (context.Cause) of the context
// FirstTryContext returns in a fallback after a timeout.
var ErrFirstTrySkipped = errors.New("compact: no summary request after one timed out")

type afterTimeoutKey struct{}

// FallbackContext returns the context a fallback summary runs on once a
// first try on ctx failed with err: a context of its own, bounded by d
// (0 means DefaultFallbackTimeout), with ctx's values but not its
// deadline (context.WithoutCancel), so that a summary request that timed
// out (on ctx's deadline or its own) is still followed by a summary; it
// is cancelled when ctx is cancelled other than by its deadline (the
// caller went away). When the caller already went away there is no point
// in a summary: it returns ctx's error. After a timeout the context
// returned makes FirstTryContext skip any further first try.
func FallbackContext(ctx context.Context, err error, d time.Duration) (context.Context, context.CancelFunc, error) {
	if d <= 0 {
		d = DefaultFallbackTimeout
	}
	cerr := ctx.Err()
	if cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
		return ctx, func() {}, cerr
	}
	base := context.WithoutCancel(ctx)
	if cerr != nil || errors.Is(err, context.DeadlineExceeded) {
		base = context.WithValue(base, afterTimeoutKey{}, true)
	}
	fctx, cancel := context.WithTimeout(base, d)
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel() // the caller went away
		}
	})
	return fctx, func() { stop(); cancel() }, nil
}
