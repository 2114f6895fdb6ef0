package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
)

// API names the wire format of a request.
type API string

// The APIs the proxy edits (or, for Gemini, bills as it would an edited
// one's). Every other request passes through.
const (
	// APIAnthropic is POST /v1/messages (Anthropic Messages).
	APIAnthropic API = "anthropic"
	// APIChat is POST /v1/chat/completions (OpenAI Chat Completions).
	APIChat API = "openai-chat"
	// APIResponses is POST /v1/responses (OpenAI Responses) carrying its
	// whole history: store false and no previous_response_id.
	APIResponses API = "openai-responses"
	// APIGemini is POST /v1beta/models/{model}:generateContent and
	// :streamGenerateContent (Google's Gemini API), the model in the
	// path. Its bodies are billed, keyed to sessions and logged, and
	// passed on unedited: the Engine does not see them yet.
	APIGemini API = "gemini"
)

// Request is what the proxy hands the Engine for one model request.
//
// Document holds the conversation decoded losslessly from the request body
// (agentctx.ParseDocument): for Anthropic and OpenAI chat it is the body
// itself (Format agentctx.FormatObject, so Document.System gives a
// top-level "system"); for Responses it is the input items mapped onto
// chat-shaped messages (see ResponsesMessages), Format agentctx.FormatArray.
// The Engine must not modify Document, Header or Body.
type Request struct {
	API        API
	SessionKey string
	// Tenant, when set (Options.Tenants), names the client's tenant
	// (see Tenant): the Engine keeps its sessions and artifacts in
	// TenantNamespace(its namespace, Tenant); "" means its own namespace.
	Tenant string
	// Header holds the client's request headers, credentials included:
	// an Engine must never log them.
	Header http.Header
	// Model is the body's "model".
	Model string
	// Document is the decoded conversation.
	Document *agentctx.Document
	// Facts holds what the proxy knows of each of Document.Messages, index
	// for index (their encodings and hashes: see agentctx.Conversation),
	// nil when it knows nothing. An Engine hands them to the pipeline
	// (pipeline.Pipeline.PrepareConversation) so that no message is
	// encoded again. They are made for this request alone: an Engine may
	// fill them in place (pipeline.CallOptions.OwnFacts, as the
	// PipelineEngine does). Of what it fills in, the proxy reads only the
	// token counts, once Prepare has returned: a message's Tokens, when
	// set, are the Engine's count of it, which the estimate of the bill
	// without agentctx uses instead of counting it again (MessageCounter).
	Facts []agentctx.Facts
	// Tools is the raw "tools" member of the body (nil when absent), and
	// System the raw system prompt: Anthropic's top-level "system",
	// Responses' "instructions" (nil when absent). Both are sent with every
	// request and count toward the context window.
	Tools  json.RawMessage
	System json.RawMessage
	// CacheRetention is the body's OpenAI "prompt_cache_retention"
	// ("in_memory", "24h"; "" when absent): with "24h" the provider keeps
	// the cached prefix up to a day, not minutes (see pricesOf).
	CacheRetention string
	// ThinkingEnabled reports that the request asks for extended thinking
	// (Anthropic "thinking" of a type other than "disabled").
	ThinkingEnabled bool
	// Binding is what the open turn's signed thinking binds (set by the
	// server for Anthropic requests with thinking on): the leading
	// messages an Engine must not change, and whether their edits are
	// delegated to the provider (ContextNative). See
	// pipeline.CallOptions.
	Binding pipeline.CallOptions
	// ClientSummary reports that the request is the client's own
	// compaction request, recognised on the OpenAI APIs (clientcompact.go):
	// its answer is the summary the client goes on from instead of the
	// history, so an Engine should send the tool results new in it (which
	// the model has never read) whole, as the PipelineEngine does
	// (pipeline.CallOptions.ClientSummary).
	ClientSummary bool
	// Received is when the proxy received the request.
	Received time.Time
	// Prefix is set only on the request an Engine hands a summarizer (see
	// PipelineOptions.Summarizer): the body last forwarded upstream for
	// the session, nil when unknown. A summary request that sends it with
	// its instruction appended at the end reuses the provider's prompt
	// cache of that request (UpstreamSummarizers does).
	Prefix []byte
}

// Prepared is the Engine's answer: the messages to send.
//
// Messages is the whole list to send. Messages that are unchanged must
// encode (Message.AppendJSON) exactly as the request's own: the proxy
// matches them by their encoding and forwards their original bytes, so an
// Engine that returns the request's messages unchanged makes the proxy
// forward the request byte for byte. Changed messages (a replaced tool
// result, a summary in place of earlier messages) are written with the
// lossless encoder, which keeps every member the Engine did not change.
type Prepared struct {
	Messages []agentctx.Message
	// TokensBefore and TokensAfter are the Engine's counts of the request
	// as received and as it will be sent (system and tools included).
	TokensBefore int
	TokensAfter  int
	// Compacted reports that a compaction happened in this call.
	Compacted bool
	// PrefixChanged reports that the Engine changed, on purpose, what it
	// had sent for this session before (a new batch of pruned results, a
	// compaction): the provider's prompt cache is rebuilt from the first
	// change. An Engine whose edits are sticky changes the prefix only
	// then; the proxy's own count of cache breaks is checked against it.
	PrefixChanged bool
	// Pruned and Offloaded count the tool results changed by this call.
	Pruned    int
	Offloaded int
	// Deferred counts the decisions not applied because the result lies
	// in the prefix the open turn's thinking binds (Request.Binding).
	Deferred int
	// Unchanged, when true, tells the proxy that Messages are the
	// request's own, unchanged: it forwards the body as received without
	// comparing the lists (a fast path; false is always correct).
	Unchanged bool
	// Sources, when set, says which messages the Engine changed:
	// Sources[i] is, for Messages[i], the index of the request's message
	// (in Request.Document.Messages) it is, unchanged, or -1 for a message
	// the Engine changed or added (pipeline.Result.Sources). The proxy
	// then encodes only the changed messages to splice them. nil (the
	// zero value) is always correct: the proxy compares the encodings of
	// every message. A list of another length is ignored.
	Sources []int
	// Facts, when set, holds what the Engine knows of each of Messages
	// (pipeline.Result.Facts): an Encoding there must be the message's
	// encoding (Message.AppendJSON), which the proxy then uses instead of
	// encoding the message again. nil is always correct.
	Facts []agentctx.Facts
	// Report is the pipeline's report of this call when the Engine runs
	// one (PipelineEngine does), nil otherwise: traces show its steps.
	Report *pipeline.Report
}

// Engine is the seam between the proxy and context management: the proxy
// owns HTTP, wire formats, streaming and byte-faithful splicing; the Engine
// owns every decision about the conversation (what to prune, offload,
// compact) and its state between requests.
//
// Prepare is called once per editable request, before it is forwarded. It
// returns the messages to send (see Prepared), or an error, on which the
// proxy forwards the request unedited and logs the error: a failing Engine
// never breaks the client. Prepare must honour ctx (the client's request
// context). Requests of one session may arrive concurrently; the Engine
// serializes what it must.
//
// Observe is called after a response completes with the usage the upstream
// reported for it, so the Engine can calibrate its counts: counted is the
// Engine's count of the request (its Prepared.TokensAfter), 0 when it
// prepared none. It must not block for long.
//
// The default Engine is PipelineEngine, over today's pipeline.Pipeline; the
// live-session engine plugs in here.
type Engine interface {
	Prepare(ctx context.Context, req *Request) (*Prepared, error)
	Observe(ctx context.Context, sessionKey string, u pricing.Usage, counted int)
}

// Forwarder is implemented by Engines that want the body of each prepared
// request as it went upstream (the proxy calls Forwarded after the
// upstream accepted it with 200): PipelineEngine keeps the last one of a
// session whose next request may compact, so its summary request can reuse
// the provider's prompt cache. body must not be modified.
type Forwarder interface {
	Forwarded(sessionKey string, api API, body []byte)
}

// Closer is implemented by Engines that hold resources; Server.Close calls it.
type Closer interface {
	Close() error
}
