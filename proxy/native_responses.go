package proxy

// # Native mode for the OpenAI Responses API
//
// OpenAI has no server-side clearing of tool results; its context
// management is compaction (see internal/lib/respcompact for the facts relied
// on, from https://developers.openai.com/api/docs/guides/compaction and
// the API reference): POST /v1/responses/compact returns the user messages
// and one opaque, encrypted compaction item that carries the rest, and
// context_management [{"type":"compaction","compact_threshold":N}] on POST
// /v1/responses has the server compact when its threshold is crossed.
//
// With ContextNative, agentctx still decides: its pipeline compacts when
// its trigger says so, what its partition says (head and tail kept), after
// storing every original (the tool results as artifacts named by their
// call ids, the middle as an archive, all listed in the summary's "Stored
// originals" section, so the read-back tools find what the provider
// compacted). Only the summary moves: NativeSummarizers asks the provider
// to compact the middle (one POST /v1/responses/compact with the client's
// credentials and model, billed to the request being prepared like a
// summary request), and the summary the session keeps holds the returned
// window. Where that summary is sent (spliceResponses, respitems.Window), the window's items
// (the user messages, then the compaction item) take its place, followed
// by a user message with the summary's title, a note, and the pointers to
// the originals. The session sends the same window, byte for byte, on
// every later request, until a later compaction hands it back to the
// provider, which folds it into the next one.
//
// The threshold form is not used: it would move the decision (when, and
// what) to the server, put a compaction item into the client's own
// history, and compact what agentctx has not stored. Requests whose
// history lives upstream (previous_response_id, store true) are not
// edited, in any mode.
//
// Chat Completions has no context management of OpenAI's: in native mode
// its requests are edited client-side (NativeSummarizers returns the
// fallback summarizer for them), as are Anthropic's compactions (see
// native.go for Anthropic's context editing).

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/lib/respcompact"
)

// NativeSummarizerOptions configure NativeSummarizers.
type NativeSummarizerOptions struct {
	// OpenAIURL is the OpenAI upstream base URL (as in Options); "" means
	// the public API.
	OpenAIURL string
	// Transport sends the compaction requests; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Fallback returns the summarizer of the requests the provider does
	// not compact (other APIs, no credentials) and of a failed compaction;
	// nil means compact.Extractive{} for every request.
	Fallback func(req *Request) compact.Summarizer
	// MaxInputChars bounds the texts of the middle sent to be compacted
	// (the longest are cut in their middle: the originals are stored, and
	// the summary's pointers say where); 0 means 400,000 characters
	// (about 100K tokens).
	MaxInputChars int
	// Timeout bounds one compaction request; 0 means 2 minutes, and
	// at most three quarters of the time its context has left
	// (compact.FirstTryContext). On timeout the fallback summarizes, on
	// a deadline of its own (compact.DefaultFallbackTimeout).
	Timeout time.Duration
	// Logger receives a line when a compaction fails; nil discards.
	Logger *slog.Logger
}

// NativeSummarizers returns, for a request, the summarizer of
// ContextNative (PipelineOptions.Summarizer): for a Responses request
// with credentials and a model, the provider's compaction of the middle
// (see the notes above); for an Anthropic request large enough that the
// provider compacts it (native.go), compact.Extractive (only its
// pointers are sent, in the compaction's instructions); for any other
// request, and when the compaction fails, opts.Fallback's summarizer,
// which gets the middle without the encrypted windows of earlier
// compactions.
func NativeSummarizers(opts NativeSummarizerOptions) func(req *Request) compact.Summarizer {
	if opts.OpenAIURL == "" {
		opts.OpenAIURL = DefaultOpenAIURL
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxInputChars <= 0 {
		opts.MaxInputChars = 400_000
	}
	fallback := opts.Fallback
	if fallback == nil {
		fallback = func(*Request) compact.Summarizer { return compact.Extractive{} }
	}
	client := &http.Client{Transport: opts.Transport}
	return func(req *Request) compact.Summarizer {
		fb := fallback(req)
		if req != nil && req.API == APIAnthropic && anthropicCompacts(req) {
			// The provider writes the summary (native.go): only the
			// pointers of agentctx's are used, so no summary request.
			return compact.Extractive{}
		}
		if req == nil || req.API != APIResponses {
			return fb
		}
		text := compact.SummarizerFunc(func(ctx context.Context, r compact.Request) (string, error) {
			r.Messages = respcompact.Strip(r.Messages)
			return fb.Summarize(ctx, r)
		})
		if req.Header.Get("Authorization") == "" || req.Model == "" {
			return text
		}
		return compact.SummarizerFunc(func(ctx context.Context, r compact.Request) (string, error) {
			s, err := compactUpstream(ctx, client, &opts, req, r)
			if err != nil {
				return fallBack(ctx, text, 0, r, opts.Logger, req.SessionKey, "proxy: the provider's compaction failed; summarizing client-side", err)
			}
			return s, nil
		})
	}
}

// compactUpstream compacts the middle with the provider and returns the
// summary holding the window.
func compactUpstream(ctx context.Context, client *http.Client, o *NativeSummarizerOptions, req *Request, r compact.Request) (string, error) {
	items, err := respcompact.Items(r.Messages, o.MaxInputChars)
	if err != nil {
		return "", err
	}
	h := http.Header{}
	for _, k := range []string{"Authorization", "OpenAI-Organization", "OpenAI-Project", "Session_id"} {
		if v := req.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	h.Set(HeaderSummary, "1")
	ctx, cancel := compact.FirstTryContext(ctx, o.Timeout)
	defer cancel()
	res, err := respcompact.Compact(ctx, client, respcompact.Request{BaseURL: o.OpenAIURL, Header: h, Model: req.Model, Input: items})
	if err != nil {
		return "", withTimeout(ctx, err)
	}
	reportSummary(ctx, req, res.Body) // the compaction pass, billed to the request being prepared
	return respcompact.Summary(res.Window)
}

// providerCompacted reports whether the messages to send hold a window
// of the provider's compaction that the proxy writes (not the client's).
func providerCompacted(a *alignment) bool {
	for j := range a.out {
		if a.match[j] < 0 && a.out[j].Role == agentctx.RoleUser && strings.Contains(messageText(&a.out[j]), respcompact.Marker) {
			return true
		}
	}
	return false
}
