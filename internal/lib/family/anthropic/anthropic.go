// Package anthropic is the Anthropic Messages API family (POST
// /v1/messages) for the proxy: see internal/lib/family.
package anthropic

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

// Family is the Anthropic Messages API.
type Family struct{}

var (
	_ family.Family    = Family{}
	_ family.Summaries = Family{}
)

// Name is the family's name (proxy.APIAnthropic).
const Name = "anthropic"

// Version is the Anthropic-Version a request the proxy sends of its own
// carries when the client's gave none.
const Version = "2023-06-01"

// Info returns the family's facts.
func (Family) Info() family.Info {
	return family.Info{Name: Name, Provider: pricing.Anthropic, Endpoint: "/v1/messages", List: "messages", System: "system",
		Credentials: []string{"X-Api-Key", "Authorization"}}
}

// Claim claims the paths under /v1/messages, and a request with an
// Anthropic-Version or an X-Api-Key header, as hints: a path that names
// an endpoint of another family wins over them.
func (Family) Claim(path string, h http.Header) family.Claim {
	if strings.HasPrefix(path, "/v1/messages") || h.Get("Anthropic-Version") != "" || h.Get("X-Api-Key") != "" {
		return family.ClaimHint
	}
	return family.ClaimNone
}

// Editable reports true: a Messages request carries its whole history.
func (Family) Editable(*wire.Body) bool { return true }

// ReadEvent reads message_start's and message_delta's usage.
func (Family) ReadEvent(r *wire.UsageReader, data []byte) { r.Event(wire.Anthropic, data) }

// ReadWhole reads a whole message's usage.
func (Family) ReadWhole(r *wire.UsageReader, answer []byte) { r.Whole(wire.Anthropic, answer) }

// Terminal reports a message_stop event.
func (Family) Terminal(data []byte, _ bool) bool {
	// The API writes {"type":"message_stop"}; the test finds it without
	// parsing the other events.
	return bytes.Contains(data, []byte(`message_stop"`)) && rawjson.Kind(data) == '{' && rawjson.Valid(data) == nil &&
		stringOf(rawjson.Get(data, "type")) == "message_stop"
}

// ErrorBody returns {"type":"error","error":{"type":…,"message":…}}.
func (Family) ErrorBody(e family.Error) []byte {
	b := []byte(`{"type":"error","error":{"type":`)
	b = rawjson.AppendString(b, e.Type)
	b = append(b, `,"message":`...)
	b = rawjson.AppendString(b, e.Message)
	return append(b, "}}\n"...)
}

// SummaryBody returns a Messages request with a system prompt and one user
// message.
func (Family) SummaryBody(model, system, prompt string, maxTokens int) []byte {
	q := func(s string) []byte { return rawjson.AppendString(nil, s) }
	return fmt.Appendf(nil, `{"model":%s,"max_tokens":%d,"system":%s,"messages":[{"role":"user","content":%s}]}`,
		q(model), maxTokens, q(system), q(prompt))
}

// SummaryHeader sets Anthropic-Version when the client sent none.
func (Family) SummaryHeader(h http.Header) {
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", Version)
	}
}

// AnswerParts returns the text blocks of a message's content.
func (Family) AnswerParts(answer []byte) []string {
	var parts []string
	els, _ := rawjson.Elements(rawjson.Get(answer, "content"))
	for _, el := range els {
		if stringOf(rawjson.Get(el, "type")) == "text" {
			parts = append(parts, stringOf(rawjson.Get(el, "text")))
		}
	}
	return parts
}

func stringOf(raw []byte) string {
	if rawjson.Kind(raw) != '"' {
		return ""
	}
	return rawjson.Unquote(raw)
}
