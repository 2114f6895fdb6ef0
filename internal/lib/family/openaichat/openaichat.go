// Package openaichat is the OpenAI Chat Completions family (POST
// /v1/chat/completions) for the proxy: see internal/lib/family.
package openaichat

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// Family is OpenAI's Chat Completions API.
type Family struct{}

var (
	_ family.Family    = Family{}
	_ family.Summaries = Family{}
)

// Name is the family's name (proxy.APIChat).
const Name = "openai-chat"

// Info returns the family's facts.
func (Family) Info() family.Info {
	return family.Info{Name: Name, Provider: pricing.OpenAI, Endpoint: "/v1/chat/completions", List: "messages", System: "system",
		Credentials: []string{"Authorization"}}
}

// Claim claims a path that ends in /chat/completions or is under
// /v1/chat/, and a bearer token as a credential OpenAI's clients send.
func (Family) Claim(path string, h http.Header) family.Claim {
	return Claim(path, h, strings.HasSuffix(path, "/chat/completions") || strings.HasPrefix(path, "/v1/chat/"))
}

// Claim is the claim of an OpenAI family whose paths are path (ClaimPath
// when path, else ClaimCredential for a bearer token): the Responses
// family shares it.
func Claim(_ string, h http.Header, path bool) family.Claim {
	switch {
	case path:
		return family.ClaimPath
	case strings.HasPrefix(strings.ToLower(h.Get("Authorization")), "bearer "):
		return family.ClaimCredential
	}
	return family.ClaimNone
}

// Editable reports true: a chat request carries its whole history.
func (Family) Editable(*wire.Body) bool { return true }

// ReadEvent reads the usage chunk of a stream.
func (Family) ReadEvent(r *wire.UsageReader, data []byte) { r.Event(wire.Chat, data) }

// ReadWhole reads a whole completion's usage.
func (Family) ReadWhole(r *wire.UsageReader, answer []byte) { r.Whole(wire.Chat, answer) }

// Terminal reports the stream's [DONE].
func (Family) Terminal(data []byte, _ bool) bool {
	return bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]"))
}

// ErrorBody returns OpenAI's error shape:
// {"error":{"message":…,"type":"invalid_request_error","param":null,"code":…}}.
func (Family) ErrorBody(e family.Error) []byte { return ErrorBody(e) }

// ErrorBody is OpenAI's error shape, which the Responses family shares.
func ErrorBody(e family.Error) []byte {
	b := rawjson.AppendString([]byte(`{"error":{"message":`), e.Message)
	b = append(b, `,"type":"invalid_request_error","param":null,"code":`...)
	b = rawjson.AppendString(b, e.Code)
	return append(b, "}}\n"...)
}

// SummaryBody returns a chat request with a system message and a user
// message.
func (Family) SummaryBody(model, system, prompt string, _ int) []byte {
	q := func(s string) []byte { return rawjson.AppendString(nil, s) }
	return fmt.Appendf(nil, `{"model":%s,"messages":[{"role":"system","content":%s},{"role":"user","content":%s}]}`,
		q(model), q(system), q(prompt))
}

// SummaryHeader adds nothing.
func (Family) SummaryHeader(http.Header) {}

// AnswerParts returns the first choice's message content.
func (Family) AnswerParts(answer []byte) []string {
	els, _ := rawjson.Elements(rawjson.Get(answer, "choices"))
	if len(els) == 0 {
		return nil
	}
	return []string{stringOf(rawjson.Get(rawjson.Get(els[0], "message"), "content"))}
}

func stringOf(raw []byte) string {
	if rawjson.Kind(raw) != '"' {
		return ""
	}
	return rawjson.Unquote(raw)
}
