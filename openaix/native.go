package openaix

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/respcompact"
	"github.com/agentctx/agentctx/internal/lib/sdkmw"
)

// NativeMiddleware is Middleware in native context-management mode (the
// proxy's --context-management native): on a Responses request the
// pipeline's compactions are written by OpenAI's Responses compaction
// (POST /v1/responses/compact, internal/lib/respcompact), when the pipeline's
// summarizer is NativeSummarizer's. The pipeline still decides when and
// what to compact, and stores every original first (tool results as
// artifacts named by their call ids, the middle as an archive), so the
// read-back tools find what the provider compacted; the request sent holds
// the compacted window (the user messages, then the opaque compaction
// item) in place of the middle, followed by a message with the pointers
// to the originals, and every later request of the loop sends the same
// window again. OpenAI has no server-side clearing of tool results: prune
// and offload stay client-side edits. Chat Completions has no context
// management of OpenAI's: its requests are prepared as by Middleware.
//
// The compaction request is sent through the rest of the client's
// middleware and HTTP client, with the request's credentials
// (Authorization, OpenAI-Organization, OpenAI-Project) and model, to the
// request's URL followed by /compact.
func NativeMiddleware(p Preparer, opts Options) option.Middleware {
	resp := responsesProvider
	decode := responsesDecoder(opts.DecodeCacheBytes)
	resp.Decode = func(ctx context.Context, body []byte) (*agentctx.Document, func([]agentctx.Message, []int) ([]byte, error), error) {
		if c, ok := ctx.Value(callKey{}).(*nativeCall); ok {
			c.model = modelOf(body)
		}
		return decode(ctx, body)
	}
	chat, responses := sdkmw.New(p, provider, opts), sdkmw.New(p, resp, opts)
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if !resp.Match(req) {
			return chat(req, next)
		}
		c := &nativeCall{url: *req.URL, header: req.Header.Clone(), next: next}
		c.url.Path += "/compact"
		c.url.RawPath = ""
		return responses(req.WithContext(context.WithValue(req.Context(), callKey{}, c)), next)
	}
}

// WithPipelineNative is the client option that prepares every Chat
// Completions and Responses request with p in native mode
// (NativeMiddleware). p's compaction summarizer must be
// NativeSummarizer's for the provider to compact.
func WithPipelineNative(p Preparer, opts Options) option.RequestOption {
	return option.WithMiddleware(NativeMiddleware(p, opts))
}

// callKey keys the *nativeCall of a Responses request in native mode in
// the context the pipeline (and its summarizer) runs with.
type callKey struct{}

// nativeCall is what NativeSummarizer needs of the request being
// prepared.
type nativeCall struct {
	url    url.URL
	header http.Header
	model  string
	next   option.MiddlewareNext
}

func modelOf(body []byte) string {
	ms, err := rawjson.Members(body)
	if err != nil {
		return ""
	}
	for _, m := range ms {
		if m.Key == "model" && rawjson.Kind(m.Value) == '"' {
			return rawjson.Unquote(m.Value)
		}
	}
	return ""
}

// NativeSummarizerOptions configure NativeSummarizer. The zero value
// means: compact.Extractive{} as the fallback, 400,000 characters of
// input at most, two minutes per compaction, nothing logged.
type NativeSummarizerOptions struct {
	// Fallback summarizes what the provider does not compact (a Chat
	// Completions request, a request without credentials or model) and
	// when its compaction fails; nil means compact.Extractive{}.
	Fallback compact.Summarizer
	// MaxInputChars bounds the texts of the middle sent to be compacted
	// (the longest are cut in their middle: the originals are stored, and
	// the summary's pointers say where); 0 means 400,000 (about 100K
	// tokens).
	MaxInputChars int
	// Timeout bounds one compaction request; 0 means 2 minutes, and at
	// most three quarters of the time its context has left
	// (compact.FirstTryContext). On timeout the fallback summarizes, on
	// a deadline of its own (compact.DefaultFallbackTimeout).
	Timeout time.Duration
	// Logger receives a line when a compaction fails; nil discards.
	Logger *slog.Logger
}

// NativeSummarizer returns the compaction summarizer of native mode, for
// pipeline.Options.Compact.Summarizer: while NativeMiddleware prepares a
// Responses request, the provider compacts the middle (the summary the
// pipeline keeps holds the returned window, respcompact.Summary); for any
// other request, and when the compaction fails, the fallback summarizes
// the middle (without the encrypted windows of earlier compactions).
//
//	p, _ := pipeline.New(pipeline.Options{SessionID: "s1",
//		Compact: compact.Options{Summarizer: openaix.NativeSummarizer(openaix.NativeSummarizerOptions{})}})
//	client := openai.NewClient(openaix.WithPipelineNative(p, openaix.Options{}))
//
// The zero NativeSummarizerOptions means the documented defaults.
func NativeSummarizer(opts NativeSummarizerOptions) compact.Summarizer {
	if opts.Fallback == nil {
		opts.Fallback = compact.Extractive{}
	}
	if opts.MaxInputChars <= 0 {
		opts.MaxInputChars = 400_000
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return compact.SummarizerFunc(func(ctx context.Context, r compact.Request) (string, error) {
		c, ok := ctx.Value(callKey{}).(*nativeCall)
		if !ok || c.model == "" || c.header.Get("Authorization") == "" {
			r.Messages = respcompact.Strip(r.Messages)
			return opts.Fallback.Summarize(ctx, r)
		}
		s, err := c.compact(ctx, &opts, r)
		if err != nil {
			// The fallback runs on a deadline of its own: a compaction
			// that timed out is still followed by a summary.
			fctx, cancel, cerr := compact.FallbackContext(ctx, err, 0)
			defer cancel()
			if cerr != nil {
				return "", cerr // the caller went away
			}
			opts.Logger.WarnContext(ctx, "openaix: the provider's compaction failed; summarizing client-side", "err", err)
			r.Messages = respcompact.Strip(r.Messages)
			return opts.Fallback.Summarize(fctx, r)
		}
		return s, nil
	})
}

// compact has the provider compact the middle and returns the summary
// holding the window.
func (c *nativeCall) compact(ctx context.Context, o *NativeSummarizerOptions, r compact.Request) (string, error) {
	items, err := respcompact.Items(r.Messages, o.MaxInputChars)
	if err != nil {
		return "", err
	}
	h := http.Header{}
	for _, k := range []string{"Authorization", "OpenAI-Organization", "OpenAI-Project"} {
		if v := c.header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	ctx, cancel := compact.FirstTryContext(ctx, o.Timeout)
	defer cancel()
	client := &http.Client{Transport: roundTripFunc(func(hr *http.Request) (*http.Response, error) {
		u := c.url
		hr.URL, hr.Host = &u, ""
		return c.next(hr)
	})}
	res, err := respcompact.Compact(ctx, client, respcompact.Request{BaseURL: c.url.Scheme + "://" + c.url.Host, Header: h, Model: c.model, Input: items})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded) // a timeout: no further request (compact.FallbackContext)
		}
		return "", err
	}
	return respcompact.Summary(res.Window)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
