// Package gemini is Google's Gemini API family (POST
// /v1beta/models/{model}:generateContent and :streamGenerateContent, as
// Gemini CLI and the Gen AI SDKs send them) for the proxy: see
// internal/lib/family.
//
// The model is in the path (family.ModelEndpoints), the key in the
// x-goog-api-key header or the key= query parameter
// (family.QueryClaimer), and a stream is SSE with alt=sse, else a JSON
// array of response objects written element by element
// (family.ArrayStreamer). Every response object carries a usageMetadata;
// the last chunk of a stream, whose candidate has a finishReason, carries
// the whole usage.
//
// Its bodies are passed on unedited (Editable is false): the proxy bills
// them, keys them to sessions and logs them, and the session engine does
// not see them yet.
package gemini

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// Family is Google's Gemini API (generativelanguage.googleapis.com).
type Family struct{}

var (
	_ family.Family         = Family{}
	_ family.ModelEndpoints = Family{}
	_ family.QueryClaimer   = Family{}
	_ family.ArrayStreamer  = Family{}
)

// Name is the family's name (proxy.APIGemini).
const Name = "gemini"

// Info returns the family's facts.
func (Family) Info() family.Info {
	return family.Info{Name: Name, Provider: pricing.Google, Endpoint: "/v1beta/models/{model}:generateContent",
		List: "contents", System: "systemInstruction", Credentials: []string{"X-Goog-Api-Key"}}
}

// versions are the API versions whose model methods the family serves.
var versions = [...]string{"/v1beta/", "/v1/", "/v1alpha/"}

// ModelMethod splits the path of a model method, /v1beta/models/{model}:
// {method} (or under /v1/ or /v1alpha/), into the model and the method;
// ok is false for any other path. The model has no slash.
func ModelMethod(path string) (model, method string, ok bool) {
	for _, v := range versions {
		if rest, found := strings.CutPrefix(path, v+"models/"); found {
			model, method, ok = strings.Cut(rest, ":")
			return model, method, ok && model != "" && method != "" && !strings.Contains(model, "/") && !strings.Contains(method, "/")
		}
	}
	return "", "", false
}

// EndpointModel reports a generateContent or streamGenerateContent path,
// and its model. countTokens is not one: it is free and has no usage.
func (Family) EndpointModel(path string) (string, bool) {
	model, method, ok := ModelMethod(path)
	if !ok || method != "generateContent" && method != "streamGenerateContent" {
		return "", false
	}
	return model, true
}

// Claim claims the path of any model method (generateContent,
// streamGenerateContent, countTokens...), and as hints a path under
// /v1beta/ or /v1alpha/ (versions the other families do not have) and an
// x-goog-api-key header (which only Google's clients send).
func (Family) Claim(path string, h http.Header) family.Claim {
	if _, _, ok := ModelMethod(path); ok {
		return family.ClaimPath
	}
	if strings.HasPrefix(path, "/v1beta/") || strings.HasPrefix(path, "/v1alpha/") || h.Get("X-Goog-Api-Key") != "" {
		return family.ClaimHint
	}
	return family.ClaimNone
}

// ClaimQuery claims, as a hint, a request whose key is in the query
// (key=) and that carries no credentials of another family's (X-Api-Key,
// Authorization).
func (Family) ClaimQuery(q url.Values, h http.Header) family.Claim {
	if HasQueryKey(q, h) {
		return family.ClaimHint
	}
	return family.ClaimNone
}

// HasQueryKey reports a request whose credentials are the key= query
// parameter: it has one, and neither an X-Api-Key nor an Authorization
// header.
func HasQueryKey(q url.Values, h http.Header) bool {
	return q.Has("key") && h.Get("X-Api-Key") == "" && h.Get("Authorization") == ""
}

// ArrayStream reports a streamGenerateContent request without alt=sse,
// whose answer is a JSON array.
func (Family) ArrayStream(path string, q url.Values) bool {
	_, method, ok := ModelMethod(path)
	return ok && method == "streamGenerateContent" && q.Get("alt") != "sse"
}

// Editable reports false: the proxy does not edit Gemini bodies yet.
func (Family) Editable(*wire.Body) bool { return false }

// ReadEvent reads a chunk's usageMetadata (an SSE event's data, or an
// element of the JSON array).
func (Family) ReadEvent(r *wire.UsageReader, data []byte) { r.Event(wire.Gemini, data) }

// ReadWhole reads a whole answer's usageMetadata (or an array stream's,
// read whole).
func (Family) ReadWhole(r *wire.UsageReader, answer []byte) { r.Whole(wire.Gemini, answer) }

// Terminal reports the chunk with a finishReason, which carries the
// answer's whole usage and is its last.
func (Family) Terminal(data []byte, final bool) bool {
	if final {
		return true
	}
	if rawjson.Kind(data) != '{' || !bytes.Contains(data, []byte(`finishReason"`)) {
		return false
	}
	return wire.GeminiFinished(rawjson.Get(data, "candidates"))
}

// ErrorBody returns Google's error shape (google.rpc.Status as JSON),
// which Gemini CLI and the Gen AI SDKs parse:
// {"error":{"code":400,"message":…,"status":"INVALID_ARGUMENT"}}.
func (Family) ErrorBody(e family.Error) []byte {
	code := e.Status
	if code == 0 {
		code = http.StatusBadRequest
	}
	b := append([]byte(`{"error":{"code":`), strconv.Itoa(code)...)
	b = append(b, `,"message":`...)
	b = rawjson.AppendString(b, e.Message)
	b = append(b, `,"status":`...)
	b = rawjson.AppendString(b, StatusName(code))
	return append(b, "}}\n"...)
}

// StatusName is the canonical name (google.rpc.Code) Google's APIs give
// an HTTP status.
func StatusName(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}
