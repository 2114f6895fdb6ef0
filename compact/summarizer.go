package compact

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
)

// Request is what a Summarizer summarizes.
type Request struct {
	// Messages is the middle of the history, oldest first. It may hold a
	// previous summary (see IsSummary), which must be carried into the new
	// one. It is shared with the caller and must not be modified.
	Messages []agentctx.Message
	// Facts are those of Messages, index for index (Options.Facts), or
	// nil when not known. They are shared and must not be modified.
	Facts []agentctx.Facts
	// Archive is the id of the archive that holds Messages whole
	// (Archived.ID: an artifact id, or a file archive's path), or empty
	// when none was written. Its pointer, with its path, is among
	// Pointers.
	Archive string
	// Pointers say where the originals of Messages are stored: the tool
	// results the caller kept (Options.Pointers), those an earlier summary
	// in Messages listed, and the archive. A summarizer should end its
	// summary with RenderPointers(Pointers); whatever it writes, Compact
	// makes the summary's pointer section that one (WithPointers).
	Pointers []Pointer
}

// A Summarizer writes the summary that replaces the middle of a history.
//
// Summarize returns the summary as plain structured text covering, as
// seed 002 F-004 asks: goals and key decisions; file operations (read,
// created, modified, deleted); tool calls (name, key result, success or
// failure); the current state of the task (progress, what is left); errors
// and their fixes. It must honour ctx (Compact bounds each attempt with
// Options.AttemptTimeout and stops when ctx is done) and must not modify
// req.Messages. An error or an empty summary is a failed attempt, which
// Compact retries; an *APIError tells Compact whether and when to retry.
//
// A Summarizer may be called from several goroutines at once.
type Summarizer interface {
	Summarize(ctx context.Context, req Request) (string, error)
}

// SummarizerFunc adapts a function to the Summarizer interface.
type SummarizerFunc func(ctx context.Context, req Request) (string, error)

// Summarize calls f(ctx, req).
func (f SummarizerFunc) Summarize(ctx context.Context, req Request) (string, error) {
	return f(ctx, req)
}

// ErrEmptySummary is the failure of an attempt whose summary was empty or
// only white space (seed 002 F-004: an empty answer is a failure).
var ErrEmptySummary = errors.New("compact: empty summary")

// APIError is a failed call to a model provider. Summarizers backed by an
// HTTP API return one (wrapped or not) so that Compact can tell a failure
// worth retrying from one that is not, and wait as long as the provider
// asks.
type APIError struct {
	// Provider names the API, such as "anthropic" or "openai".
	Provider string
	// StatusCode is the HTTP status of the answer; 0 when there was none
	// (a network error or a timeout).
	StatusCode int
	// RetryAfter is the wait the provider asked for (Retry-After), or 0.
	RetryAfter time.Duration
	// Final marks a failure that no retry can change although there was
	// no answer (missing credentials, an invalid request built locally).
	Final bool
	// Err is the underlying error.
	Err error
}

func (e *APIError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s: %v", e.Provider, e.Err)
	}
	return fmt.Sprintf("%s: HTTP %d: %v", e.Provider, e.StatusCode, e.Err)
}

// Unwrap returns Err.
func (e *APIError) Unwrap() error { return e.Err }

// Retryable reports whether the call may succeed when made again: no
// answer at all, 408, 409, 429 and any 5xx are worth retrying; other
// answers (400 bad request, 401 and 403 credentials, 404 unknown model)
// will not change, nor will a Final failure.
func (e *APIError) Retryable() bool {
	if e.Final {
		return false
	}
	switch s := e.StatusCode; {
	case s == 0, s == http.StatusRequestTimeout, s == http.StatusConflict,
		s == http.StatusTooManyRequests, s >= 500:
		return true
	}
	return false
}

// ParseRetryAfter reads a Retry-After header (seconds or an HTTP date,
// relative to now) or a retry-after-ms header. It returns 0 when there is
// none or it cannot be read.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		var ms float64
		if _, err := fmt.Sscanf(v, "%g", &ms); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var secs float64
	if _, err := fmt.Sscanf(v, "%g", &secs); err == nil {
		if secs > 0 {
			return time.Duration(secs * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// SummaryTitle is the first line of every summary the summarizers of this
// package write (the model summarizers ask the model for it, and add it
// when the model leaves it out). IsSummary looks for it.
const SummaryTitle = "# Summary of the earlier conversation"

// IsSummary reports whether m is a summary message that a compaction put in
// place of earlier messages: a user message whose text begins with
// SummaryTitle.
func IsSummary(m agentctx.Message) bool {
	if m.Role != agentctx.RoleUser {
		return false
	}
	return strings.HasPrefix(strings.TrimSpace(messageText(m)), SummaryTitle)
}

// messageText returns the string content of m, or the text of its first
// text block.
func messageText(m agentctx.Message) string {
	if m.Content.IsText() {
		return m.Content.Text()
	}
	for _, b := range m.Content.Blocks() {
		if b.Type == agentctx.BlockText {
			return b.Text
		}
	}
	return ""
}
