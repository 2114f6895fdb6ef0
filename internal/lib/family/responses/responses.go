// Package responses is the OpenAI Responses family (POST /v1/responses)
// for the proxy: see internal/lib/family.
package responses

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/openaichat"
	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// Family is OpenAI's Responses API.
type Family struct{}

var (
	_ family.Family    = Family{}
	_ family.Summaries = Family{}
)

// Name is the family's name (proxy.APIResponses).
const Name = "openai-responses"

// Info returns the family's facts.
func (Family) Info() family.Info {
	return family.Info{Name: Name, Provider: pricing.OpenAI, Endpoint: "/v1/responses", List: "input", System: "instructions",
		Credentials: []string{"Authorization"}}
}

// Claim claims a path that ends in /responses or is under /v1/responses/,
// and a bearer token as a credential OpenAI's clients send.
func (Family) Claim(path string, h http.Header) family.Claim {
	return openaichat.Claim(path, h, strings.HasSuffix(path, "/responses") || strings.HasPrefix(path, "/v1/responses/"))
}

// Editable reports whether a body carries its whole history: store false
// and no previous_response_id (else the history lives upstream).
func (Family) Editable(b *wire.Body) bool {
	prev := b.Get("previous_response_id")
	return rawjson.Kind(b.Get("store")) == 'f' && (len(prev) == 0 || rawjson.Kind(prev) == 'n')
}

// ReadEvent reads the usage of response.completed, response.incomplete or
// response.done.
func (Family) ReadEvent(r *wire.UsageReader, data []byte) { r.Event(wire.Responses, data) }

// ReadWhole reads a whole response's usage.
func (Family) ReadWhole(r *wire.UsageReader, answer []byte) { r.Whole(wire.Responses, answer) }

// Terminal reports the event that carries the usage, a stream's last.
func (Family) Terminal(_ []byte, final bool) bool { return final }

// ErrorBody returns OpenAI's error shape.
func (Family) ErrorBody(e family.Error) []byte { return openaichat.ErrorBody(e) }

// SummaryBody returns a Responses request, store false, with instructions
// and one user message.
func (Family) SummaryBody(model, system, prompt string, _ int) []byte {
	q := func(s string) []byte { return rawjson.AppendString(nil, s) }
	return fmt.Appendf(nil, `{"model":%s,"store":false,"instructions":%s,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}]}`,
		q(model), q(system), q(prompt))
}

// SummaryHeader adds nothing.
func (Family) SummaryHeader(http.Header) {}

// AnswerParts returns the output_text parts of the output items.
func (Family) AnswerParts(answer []byte) []string {
	var parts []string
	items, _ := rawjson.Elements(rawjson.Get(answer, "output"))
	for _, it := range items {
		cs, _ := rawjson.Elements(rawjson.Get(it, "content"))
		for _, c := range cs {
			if stringOf(rawjson.Get(c, "type")) == "output_text" {
				parts = append(parts, stringOf(rawjson.Get(c, "text")))
			}
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
