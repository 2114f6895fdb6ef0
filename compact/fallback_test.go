package compact_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
)

// The fallback's context outlives a first try that timed out (issue
// 49.3: the fallback got the expired context and returned at once), is
// done when the caller went away, and after a timeout makes a chained
// summarizer skip its own first try.
func TestFallbackContext(t *testing.T) {
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	gone, leave := context.WithCancel(context.Background())
	leave()
	live := context.Background()
	for _, c := range []struct {
		name     string
		ctx      context.Context
		err      error
		wantErr  bool
		skipNext bool // a FirstTryContext in the fallback is done at once
	}{
		{"ctx timed out", expired, context.DeadlineExceeded, false, true},
		{"own deadline timed out", live, context.DeadlineExceeded, false, true},
		{"upstream 500", live, &compact.APIError{StatusCode: 500}, false, false},
		{"caller went away", gone, context.Canceled, true, false},
	} {
		fctx, cancel, err := compact.FallbackContext(c.ctx, c.err, time.Minute)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err %v, want an error %v", c.name, err, c.wantErr)
		}
		if err != nil {
			cancel()
			continue
		}
		if fctx.Err() != nil {
			t.Errorf("%s: the fallback's context is done: %v", c.name, fctx.Err())
		}
		if dl, ok := fctx.Deadline(); !ok || time.Until(dl) > time.Minute {
			t.Errorf("%s: the fallback's deadline %v, want within a minute", c.name, dl)
		}
		next, ncancel := compact.FirstTryContext(fctx, time.Minute)
		if got := next.Err() != nil; got != c.skipNext {
			t.Errorf("%s: a chained first try done at once %v, want %v", c.name, got, c.skipNext)
		}
		if c.skipNext && !errors.Is(context.Cause(next), compact.ErrFirstTrySkipped) {
			t.Errorf("%s: cause %v, want ErrFirstTrySkipped", c.name, context.Cause(next))
		}
		ncancel()
		cancel()
	}
}

// A caller that goes away during the fallback stops it; its deadline
// passing does not.
func TestFallbackContextFollowsCancelNotDeadline(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	fctx, cancel, err := compact.FallbackContext(parent, context.DeadlineExceeded, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	cancelParent()
	<-fctx.Done() // the test times out if the cancel is not followed

	short, cancelShort := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelShort()
	fctx2, cancel2, err := compact.FallbackContext(short, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()
	<-short.Done()
	if fctx2.Err() != nil {
		t.Errorf("the caller's deadline ended the fallback: %v", fctx2.Err())
	}
}

// The first try leaves a quarter of the caller's time to the fallback.
func TestFirstTryContextLeavesTimeForTheFallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, c := range []struct {
		d       time.Duration
		atMost  time.Duration
		atLeast time.Duration
	}{
		{0, 45 * time.Minute, 44 * time.Minute},
		{2 * time.Hour, 45 * time.Minute, 44 * time.Minute},
		{time.Minute, time.Minute, 59 * time.Second},
	} {
		f, fc := compact.FirstTryContext(ctx, c.d)
		dl, ok := f.Deadline()
		if left := time.Until(dl); !ok || left > c.atMost || left < c.atLeast {
			t.Errorf("d %v: %v left, want between %v and %v", c.d, left, c.atLeast, c.atMost)
		}
		fc()
	}
	if f, fc := compact.FirstTryContext(context.Background(), 0); f.Err() != nil {
		t.Errorf("no deadline: %v", f.Err())
	} else {
		fc()
	}
}

// Options.Fallback writes the summary once the attempts failed, on a
// deadline of its own: after an error, after a timeout on the caller's
// own deadline, and with SummaryRequired (the summary did not fail in
// the end); never for a caller gone, nor when it fails too.
func TestCompactFallback(t *testing.T) {
	boom := errors.New("boom")
	msgs := []agentctx.Message{user(100), asst(100), user(20)}
	for _, c := range []struct {
		name      string
		ctx       func() (context.Context, context.CancelFunc)
		script    []any
		fallback  []any
		required  bool
		compacted bool
		wantErr   bool
		fbCalls   int
	}{
		{"summary error", ctxBackground, []any{boom}, []any{"fallback summary"}, false, true, false, 1},
		{"required, the fallback writes it", ctxBackground, []any{boom}, []any{"fallback summary"}, true, true, false, 1},
		{"the summary works", ctxBackground, []any{"S"}, []any{"fallback summary"}, false, true, false, 0},
		{"the fallback fails too", ctxBackground, []any{boom}, []any{errors.New("bang")}, false, false, false, 1},
		{"the fallback fails too, required", ctxBackground, []any{boom}, []any{errors.New("bang")}, true, false, true, 1},
		{"the caller's deadline passed", ctxShort, nil, []any{"fallback summary"}, false, true, false, 1},
		{"the caller went away", ctxGone, []any{context.Canceled}, []any{"fallback summary"}, false, false, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := baseOpts(t)
			o.Limit, o.Threshold, o.TailRatio, o.MaxRetries, o.SummaryRequired = 200, 0.9, 0.05, -1, c.required
			o.Summarizer = &fakeSummarizer{script: c.script}
			if c.script == nil {
				o.Summarizer = waitSummarizer{}
			}
			fb := &fakeSummarizer{script: c.fallback}
			o.Fallback = fb
			ctx, cancel := c.ctx()
			defer cancel()
			res, err := compact.Compact(ctx, msgs, o)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want an error %v", err, c.wantErr)
			}
			if fb.calls != c.fbCalls {
				t.Errorf("%d fallback calls, want %d", fb.calls, c.fbCalls)
			}
			if err != nil {
				return
			}
			if res.Compacted != c.compacted {
				t.Fatalf("compacted %v, want %v (reason %q)", res.Compacted, c.compacted, res.Reason)
			}
			if c.compacted && c.fbCalls == 1 && (!strings.Contains(res.Summary, "fallback summary") || res.Attempts != 2) {
				t.Errorf("summary %q, %d attempts; want the fallback's, 2 attempts", res.Summary, res.Attempts)
			}
			if !c.compacted && res.Reason != compact.ReasonSummarizerFailed {
				t.Errorf("reason %q, want %q", res.Reason, compact.ReasonSummarizerFailed)
			}
		})
	}
	o := baseOpts(t)
	o.FallbackTimeout = -time.Second
	if _, err := compact.Compact(context.Background(), msgs, o); !errors.Is(err, compact.ErrInvalidOption) {
		t.Errorf("a negative FallbackTimeout: %v, want ErrInvalidOption", err)
	}
}

func ctxBackground() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func ctxShort() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 50*time.Millisecond)
}

// waitSummarizer waits for its context's end.
type waitSummarizer struct{}

func (waitSummarizer) Summarize(ctx context.Context, req compact.Request) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

func ctxGone() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}
