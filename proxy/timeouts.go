package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Timeouts: every wait of the proxy is bounded (issue 49: a hung upstream
// held a request 100 s; slow bodies and idle keep-alives were held
// without limit).
const (
	// DefaultUpstreamHeaderTimeout is the default of
	// Options.UpstreamHeaderTimeout: as long as the providers' SDKs wait
	// for a whole non-streamed answer.
	DefaultUpstreamHeaderTimeout = 10 * time.Minute
	// DefaultUpstreamIdleTimeout is the default of
	// Options.UpstreamIdleTimeout.
	DefaultUpstreamIdleTimeout = 10 * time.Minute
	// DefaultClientHeaderTimeout is the default of
	// Options.ClientHeaderTimeout.
	DefaultClientHeaderTimeout = 30 * time.Second
	// DefaultClientBodyTimeout is the default of Options.ClientBodyTimeout:
	// a 64 MiB body at about 220 KB/s.
	DefaultClientBodyTimeout = 5 * time.Minute
	// DefaultClientIdleTimeout is the default of
	// Options.ClientIdleTimeout.
	DefaultClientIdleTimeout = 2 * time.Minute
)

// ErrUpstreamTimeout is matched (errors.Is) by the error of an upstream
// that sent no answer headers within Options.UpstreamHeaderTimeout, or
// nothing of its answer's body for Options.UpstreamIdleTimeout. The
// proxy answers the first 504 (Gateway Timeout) and cuts the client's
// answer at the second.
var ErrUpstreamTimeout = errors.New("proxy: the upstream did not answer in time")

// timeout returns the bound an option sets: d, def when d is zero, none
// (0) when d is negative.
func timeout(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// timeoutTransport bounds the wait for an upstream's answer headers
// (header) and, between reads, for its body (idle); zero bounds nothing.
// A stream that keeps coming is never cut, however long.
type timeoutTransport struct {
	next         http.RoundTripper
	header, idle time.Duration
}

func (t *timeoutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.header <= 0 && t.idle <= 0 {
		return t.next.RoundTrip(r)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	var timer *time.Timer
	if t.header > 0 {
		timer = time.AfterFunc(t.header, func() {
			cancel(fmt.Errorf("%w: no answer headers within %v", ErrUpstreamTimeout, t.header))
		})
	}
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	fired := timer != nil && !timer.Stop()
	if err == nil && fired {
		resp.Body.Close() // the headers came as the time ran out
		err = context.Cause(ctx)
	}
	if err != nil {
		if c := context.Cause(ctx); errors.Is(c, ErrUpstreamTimeout) {
			err = c
		}
		cancel(nil)
		return nil, err
	}
	resp.Body = newIdleBody(resp.Body, ctx, cancel, t.idle)
	return resp, nil
}

// idleBody is an upstream answer's body whose reads wait at most idle
// each (none when zero): the request's context is cancelled when one
// waits longer, and the read fails with ErrUpstreamTimeout.
type idleBody struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer
	once   sync.Once
}

func newIdleBody(body io.ReadCloser, ctx context.Context, cancel context.CancelCauseFunc, idle time.Duration) *idleBody {
	b := &idleBody{body: body, ctx: ctx, cancel: cancel, idle: idle}
	if idle > 0 {
		b.timer = time.AfterFunc(idle, func() {
			cancel(fmt.Errorf("%w: nothing of the answer for %v", ErrUpstreamTimeout, idle))
		})
	}
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if b.timer != nil {
		if err != nil {
			b.timer.Stop()
		} else {
			b.timer.Reset(b.idle)
		}
	}
	if err != nil && err != io.EOF {
		if c := context.Cause(b.ctx); errors.Is(c, ErrUpstreamTimeout) {
			err = c
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	err := b.body.Close()
	b.once.Do(func() {
		if b.timer != nil {
			b.timer.Stop()
		}
		b.cancel(nil)
	})
	return err
}

// bodyDeadline bounds the reading of a client's request body: the
// connection's read deadline is set to d from now (no bound when d is
// zero, or when w cannot set it) and cleared once the body is read to its
// end, so that it never cuts the answer that follows
// (net/http reads the connection in the background to notice a client
// hanging up, and a read deadline passing there would cancel the
// request). A body that does not come in time fails its read, with an
// error matching os.ErrDeadlineExceeded.
func bodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if d <= 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return // not a connection of net/http's
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
}

// deadlineBody clears the connection's read deadline at the body's end,
// and remembers a read that failed on it.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	done     bool
	timedOut atomic.Bool // read by the handler while the transport reads the body
}

// bodyTimedOut reports whether the reading of r's body failed on the
// deadline bodyDeadline set.
func bodyTimedOut(r *http.Request) bool {
	b, ok := r.Body.(*deadlineBody)
	return ok && b.timedOut.Load()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.timedOut.Store(true)
	}
	if err == io.EOF && !b.done {
		// (Kept after an error: net/http then discards what is left of
		// the body before it answers, which must not wait either.)
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
