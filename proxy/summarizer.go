package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/secret"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/responses"
	"github.com/agentctx/agentctx/pricing"
)

// UpstreamSummarizerOptions configure UpstreamSummarizers.
type UpstreamSummarizerOptions struct {
	// AnthropicURL and OpenAIURL are the upstream base URLs (as in
	// Options); "" means the public APIs.
	AnthropicURL, OpenAIURL string
	// Transport sends the summary requests; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Fallback writes the summary when the upstream call fails; nil means
	// compact.Extractive{}.
	Fallback compact.Summarizer
	// MaxInputChars bounds the rendered conversation sent in the one
	// summary request; 0 means 400,000 characters (about 100K tokens).
	MaxInputChars int
	// MaxTokens is the summary's output budget; 0 means 8,192.
	MaxTokens int
	// Timeout bounds the summary request; 0 means DefaultSummaryTimeout.
	// When the summarizer's context has a deadline, the request gets at
	// most three quarters of the time left before it
	// (compact.FirstTryContext), so that the fallback still runs in time.
	Timeout time.Duration
	// FallbackTimeout bounds the fallback summary once the summary
	// request failed or timed out; it runs on a deadline of its own
	// (compact.FallbackContext), even when the summarizer's context timed
	// out. 0 means compact.DefaultFallbackTimeout.
	FallbackTimeout time.Duration
	// Logger receives a line when the upstream call fails; nil discards.
	Logger *slog.Logger
}

// DefaultSummaryTimeout is the default of UpstreamSummarizerOptions.Timeout.
const DefaultSummaryTimeout = 2 * time.Minute

// UpstreamSummarizers returns, for a request, the summarizer that asks the
// same upstream, with the client's own credentials and model, for the
// compaction summary: one non-streaming request in the request's own wire
// format (Anthropic Messages, OpenAI chat or Responses) with the seed's
// summary prompt, and the extractive summary when that request fails or
// the client sent no credentials. It never makes more than one request per
// summary. The summary request has a deadline (Timeout) and the fallback
// one of its own (FallbackTimeout): a summary request that hangs is
// followed by the extractive summary, not by an uncompacted request; a
// client that went away gets neither.
func UpstreamSummarizers(opts UpstreamSummarizerOptions) func(req *Request) compact.Summarizer {
	if opts.AnthropicURL == "" {
		opts.AnthropicURL = DefaultAnthropicURL
	}
	if opts.OpenAIURL == "" {
		opts.OpenAIURL = DefaultOpenAIURL
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.Fallback == nil {
		opts.Fallback = compact.Extractive{}
	}
	if opts.MaxInputChars <= 0 {
		opts.MaxInputChars = 400_000
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = 8192
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSummaryTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	client := &http.Client{Transport: opts.Transport}
	return func(req *Request) compact.Summarizer {
		if req == nil || (req.Header.Get("X-Api-Key") == "" && req.Header.Get("Authorization") == "") || req.Model == "" {
			return opts.Fallback
		}
		return compact.SummarizerFunc(func(ctx context.Context, r compact.Request) (string, error) {
			sctx, cancel := compact.FirstTryContext(ctx, opts.Timeout)
			text, err := summarizeUpstream(sctx, client, &opts, req, r)
			err = withTimeout(sctx, err)
			cancel()
			if err == nil && strings.TrimSpace(text) != "" {
				return finishSummary(text, r.Archive), nil
			}
			if err == nil {
				err = compact.ErrEmptySummary
			}
			return fallBack(ctx, opts.Fallback, opts.FallbackTimeout, r, opts.Logger, req.SessionKey, "proxy: the upstream summary failed; using the extractive summary", err)
		})
	}
}

// fallBack runs the fallback summarizer fb on a deadline of its own
// (compact.FallbackContext) after the first try on ctx failed with err,
// logged as msg; when the client went away (ctx cancelled) it logs that,
// at info level (not an upstream fault), and returns ctx's error.
func fallBack(ctx context.Context, fb compact.Summarizer, d time.Duration, r compact.Request, log *slog.Logger, session, msg string, err error) (string, error) {
	fctx, cancel, cerr := compact.FallbackContext(ctx, err, d)
	defer cancel()
	if cerr != nil {
		log.Info("proxy: the client went away during the summary; no summary", "session", session)
		return "", cerr
	}
	log.Warn(msg, "session", session, "err", redactErr(err))
	return fb.Summarize(fctx, r)
}

// withTimeout returns err, marked as a timeout (context.DeadlineExceeded)
// when it ended the call on ctx, which timed out: the errors of the
// summary requests keep only the text of the transport's.
func withTimeout(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	return err
}

func summarizeUpstream(ctx context.Context, client *http.Client, o *UpstreamSummarizerOptions, req *Request, r compact.Request) (string, error) {
	f := familyOf(req.API)
	if f == nil {
		f = responses.Family{} // an API the proxy does not name: asked as Responses, as always
	}
	fam, ok := f.(family.Summaries)
	if !ok {
		return "", &compact.APIError{Provider: string(req.API), Err: errors.New("the API has no summary requests")}
	}
	base, path := o.OpenAIURL, f.Info().Endpoint
	if f.Info().Provider == pricing.Anthropic {
		base = o.AnthropicURL
	}
	body, cached, err := summaryBody(o, fam, req, r)
	if err != nil {
		return "", err
	}
	u, err := baseURL(base)
	if err != nil {
		return "", err
	}
	u.Path += path
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	for _, h := range []string{"X-Api-Key", "Authorization", "Anthropic-Version", "OpenAI-Organization", "OpenAI-Project"} {
		if v := req.Header.Get(h); v != "" {
			hr.Header.Set(h, v)
		}
	}
	fam.SummaryHeader(hr.Header)
	// A subscription client authenticates with a bearer token that needs
	// its OAuth beta; no other beta applies to a plain summary request. A
	// request on the forwarded body needs every beta that body was sent
	// with (context management, thinking, ...).
	for _, b := range strings.Split(req.Header.Get("Anthropic-Beta"), ",") {
		if b = strings.TrimSpace(b); b != "" && (cached || strings.HasPrefix(b, "oauth-")) {
			addBeta(hr.Header, b)
		}
	}
	if cached && bytes.Contains(body, []byte(`"prefix_mismatch_behavior"`)) {
		addBeta(hr.Header, ThinkingBindingBeta)
	}
	hr.Header.Set(HeaderSummary, "1")
	resp, err := client.Do(hr)
	if err != nil {
		return "", &compact.APIError{Provider: string(req.API), Err: fmt.Errorf("%s", redactErr(err))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", &compact.APIError{Provider: string(req.API), StatusCode: resp.StatusCode, Err: fmt.Errorf("%.200s", secret.Scrub(string(data), req.Header.Get("X-Api-Key"), req.Header.Get("Authorization")))}
	}
	reportSummary(ctx, req, data) // the proxy bills it to the request being prepared
	return strings.TrimSpace(strings.Join(fam.AnswerParts(data), "\n")), nil
}

// summaryBody returns the body of the summary request: the session's last
// forwarded body with the instruction appended, which the provider has
// cached (see cachedSummaryBody), when the Engine knows it; else a request
// of its own with the conversation rendered as text.
func summaryBody(o *UpstreamSummarizerOptions, fam family.Summaries, req *Request, r compact.Request) (body []byte, cached bool, err error) {
	if len(req.Prefix) > 0 {
		if body, err := cachedSummaryBody(req.API, req.Prefix, r); err == nil {
			return body, true, nil
		}
	}
	conv := compact.Render(r.Messages, 0)
	if utf8.RuneCountInString(conv) > o.MaxInputChars {
		conv = shortenMiddle(conv, o.MaxInputChars)
	}
	prompt := compact.SummaryPrompt + "\n\n<conversation>\n" + conv + "</conversation>"
	return fam.SummaryBody(req.Model, compact.SystemPrompt, prompt, o.MaxTokens), false, nil
}

// HeaderSummary marks the summary requests the proxy sends upstream.
const HeaderSummary = "X-Agentctx-Summary"

func finishSummary(s, archive string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, compact.SummaryTitle) {
		s = compact.SummaryTitle + "\n\n" + s
	}
	if archive != "" && !strings.Contains(s, archive) {
		s += "\n\nThe original messages are archived in " + archive + "."
	}
	return s
}

func shortenMiddle(s string, max int) string {
	r := []rune(s)
	head := max * 2 / 3
	tail := max - head
	return string(r[:head]) + fmt.Sprintf("\n[... %d characters omitted ...]\n", len(r)-head-tail) + string(r[len(r)-tail:])
}
