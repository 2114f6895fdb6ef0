package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/gemini"
	"github.com/agentctx/agentctx/pricing"
)

// Requests the proxy refuses before any work, never forwarded: those of an
// API family it does not serve, those that carry Gemini credentials or
// paths but are not the Gemini API's, and websocket upgrades.
//
// A foreign family's request, forwarded, would reach a provider it was not
// written for (the Anthropic or the OpenAI upstream) with the client's
// credentials for another: issue 24 saw Gemini CLI's x-goog-api-key go to
// the Anthropic upstream, and a Vertex AI request's Google access token
// (Authorization: Bearer) would go to OpenAI's. The Gemini API is served
// (internal/lib/family/gemini, its upstream Google's alone), but a request
// that looks like one of its (a Google key, a Gemini path) and is routed
// to another family (a Google key on /v1/messages; Google's
// OpenAI-compatible endpoint, /v1beta/openai/chat/completions) is still
// refused, so that a Google key goes to Google only. It is refused with
// one 400, in the error shape the family's clients parse, naming the
// family and what would serve it (issue 47.1). Not 501, nor any 5xx or 429: the
// clients retry those (Gemini CLI retried a 501 10 times over 217 s, then
// printed "[object Object]"), and not 404, which Gemini CLI takes for a
// missing model and answers by switching model. Gemini CLI explicitly does
// not retry a 400, the google-genai, Anthropic and AWS SDKs retry none, and
// X-Should-Retry: false tells the Anthropic and OpenAI SDKs so as well.

// foreignAPI is an API family the proxy does not serve (notForeign for
// one it serves).
type foreignAPI int

const (
	notForeign foreignAPI = iota
	// geminiAPI is a request of Google's Gemini API (Gemini CLI, Qwen
	// Code's Gemini mode, the google-genai SDKs) that the Gemini family
	// does not serve: its credentials or paths on a request routed to
	// another family.
	geminiAPI
	// vertexAI is the rest of Google's Vertex AI: Anthropic models
	// (:rawPredict, :streamRawPredict; Claude Code with
	// CLAUDE_CODE_USE_VERTEX) and its OpenAI-compatible endpoint, all under
	// /projects/{project}/locations/{location}/.
	vertexAI
	// bedrockAPI is Amazon Bedrock's runtime API: /model/{id}/invoke,
	// /invoke-with-response-stream, /converse, /converse-stream (Claude
	// Code with CLAUDE_CODE_USE_BEDROCK), signed with AWS Signature V4.
	bedrockAPI
)

// String names the family as the refusal does.
func (f foreignAPI) String() string {
	switch f {
	case geminiAPI:
		return "Gemini API"
	case vertexAI:
		return "Vertex AI"
	case bedrockAPI:
		return "Amazon Bedrock"
	}
	return ""
}

// foreignAPIOf returns the family of a request meant for a provider the
// proxy does not serve, or notForeign; fam is the family the request
// routes to (called only for a request that looks like the Gemini API's).
// It reads the path, under any prefix, and the credentials' shape; never
// their values.
func foreignAPIOf(r *http.Request, fam func() family.Family) foreignAPI {
	p := r.URL.Path
	switch {
	case strings.Contains(p, ":rawPredict"), strings.Contains(p, ":streamRawPredict"),
		strings.Contains(p, "/projects/") && strings.Contains(p, "/locations/"):
		return vertexAI
	case strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256"),
		strings.Contains(p, "/model/") && (strings.HasSuffix(p, "/invoke") || strings.HasSuffix(p, "/invoke-with-response-stream") ||
			strings.HasSuffix(p, "/converse") || strings.HasSuffix(p, "/converse-stream")):
		return bedrockAPI
	case r.Header.Get("X-Goog-Api-Key") != "",
		r.URL.RawQuery != "" && gemini.HasQueryKey(r.URL.Query(), r.Header),
		strings.Contains(p, ":generateContent"), strings.Contains(p, ":streamGenerateContent"), strings.Contains(p, ":countTokens"),
		strings.Contains(p, "/v1beta/"), strings.Contains(p, "/v1alpha/"):
		if fam().Info().Provider != pricing.Google {
			return geminiAPI
		}
	}
	return notForeign
}

// served is what the proxy serves, for the refusals' messages.
const served = "it serves the Anthropic Messages API (ANTHROPIC_BASE_URL), the OpenAI Chat Completions and Responses APIs (OPENAI_BASE_URL) " +
	"and the Gemini API's model methods, models/{model}:generateContent and :streamGenerateContent (GOOGLE_GEMINI_BASE_URL); no flag of this version serves "

// refuse answers a request of the family: 400, in the family's error
// shape, with X-Should-Retry: false.
func (f foreignAPI) refuse(w http.ResponseWriter) {
	const status = http.StatusBadRequest
	w.Header().Set("X-Should-Retry", "false")
	switch f {
	case geminiAPI:
		writeGoogleError(w, status, "agentctx proxy does not serve this request of the Gemini API: it carries a Google key or a Gemini path but is "+
			"another API's (or Google's OpenAI-compatible endpoint), and a Google key goes to Google only; nothing was forwarded: "+
			served+"it. Send Gemini requests as models/{model}:generateContent with x-goog-api-key, and other APIs' requests without Google credentials.")
	case vertexAI:
		writeGoogleError(w, status, "agentctx proxy does not serve Vertex AI (rawPredict, streamRawPredict, its OpenAI-compatible endpoint); nothing was forwarded: "+
			served+"it. Use the Anthropic API through agentctx (ANTHROPIC_BASE_URL, without CLAUDE_CODE_USE_VERTEX), or point the client at Vertex AI itself.")
	case bedrockAPI:
		// Bedrock's REST-JSON errors: the type in a header, the message in
		// the body.
		w.Header().Set("X-Amzn-Errortype", "ValidationException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b := rawjson.AppendString([]byte(`{"message":`), "agentctx proxy does not serve Amazon Bedrock (invoke, converse); nothing was forwarded: "+
			served+"it. Use the Anthropic API through agentctx (ANTHROPIC_BASE_URL, without CLAUDE_CODE_USE_BEDROCK), or point the client at Bedrock itself.")
		w.Write(append(b, "}\n"...))
	}
}

// writeGoogleError writes an error in the shape of Google's APIs
// (google.rpc.Status as JSON), the shape Gemini CLI and the google-genai
// SDKs parse: it prints "[API Error: <message> (Status: <status>)]".
// FAILED_PRECONDITION is the canonical code of a 400 whose request is
// well formed but which the server, as set up, cannot serve.
func writeGoogleError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b := append([]byte(`{"error":{"code":`), strconv.Itoa(status)...)
	b = append(b, `,"message":`...)
	b = rawjson.AppendString(b, msg)
	w.Write(append(b, `,"status":"FAILED_PRECONDITION"}}`+"\n"...))
}

// isWebsocketUpgrade reports whether a request asks to upgrade its
// connection (to a websocket, or to anything but h2c, whose offer
// serveOwn drops).
func isWebsocketUpgrade(h http.Header) bool {
	return strings.EqualFold(h.Get("Upgrade"), "websocket") || headerHas(h, "Connection", "upgrade")
}

// refuseUpgrade answers an upgrade request: 426 Upgrade Required, in the
// error shape of the API the path names. The proxy edits requests as whole
// HTTP bodies, so a websocket transport is not served. 426 is the status
// Codex (its Responses websocket transport, on by default for its own
// provider) takes as "use HTTP": it falls back at once and sends the
// request as a POST, where a 501 or any other status is retried with
// backoff first. No Upgrade header names a protocol to switch to: the one
// wanted is HTTP, which the connection already speaks.
func (s *Server) refuseUpgrade(w http.ResponseWriter, r *http.Request) {
	const msg = "agentctx proxy: websocket upgrades are not supported; send the request over HTTP (POST, streaming with SSE); Codex: supports_websockets = false"
	writeFamilyError(w, s.route(r).fam, http.StatusUpgradeRequired,
		family.Error{Type: "invalid_request_error", Code: "websocket_not_supported", Message: msg})
}
