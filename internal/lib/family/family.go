// Package family describes the API families the proxy relays and edits
// (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Google's
// Gemini API), one package per family behind the one small interface
// [Family], and the [Registry] that recognises a request's family (issue
// 46).
//
// What differs from one family to another and is cheap to state lives in
// the family's package: the path of its editable request, the upstream
// (provider) it goes to, how strongly a request's path and headers name
// it, the body members that hold its history and its system prompt,
// whether a body is one the proxy may edit, how its answers report usage
// (whole and streamed), which event ends a stream, and the shape of its
// errors. The proxy looks a request's family up once ([Registry.Route])
// and calls it; it does not switch on the family's name.
//
// What only some families do is an optional interface, found by type
// assertion: [Summaries] (a summary request of the family's own),
// [ModelEndpoints] (the model named in the path, which makes the editable
// request's path vary), [QueryClaimer] (credentials in the URL's query)
// and [ArrayStreamer] (a stream written as a JSON array, not SSE): the
// Gemini API has the last three.
//
// # Adding a family
//
// A family is a package under internal/lib/family that exports a value
// implementing [Family] (and [Summaries] when the proxy's upstream
// summarizer may ask it for a summary), with the compile-time check
// var _ family.Family = Family{}; its test runs familytest.Run with a few
// fixtures of its own wire format. Registering it is one line: its value
// in the proxy's registry (proxy/families.go), in the order that breaks
// ties between claims.
//
// Nothing here does I/O or keeps global state.
package family

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentctx/agentctx/internal/lib/wire"
	"github.com/agentctx/agentctx/pricing"
)

// Family is one API family. Its methods are called concurrently, for many
// requests at once: an implementation holds no state (a struct with no
// fields is the usual one). Every method takes what it reads as bytes or
// headers and does no I/O; none panics on any input.
type Family interface {
	// Info returns the facts of the family, the same on every call.
	Info() Info
	// Claim says how strongly a request is one of the family's, by its
	// path (unescaped, from /v1/ on when it holds /v1/) and its
	// headers: what routes a request the proxy does not edit (the
	// Registry picks the strongest claim). It reads the credentials'
	// shape, never their values.
	Claim(path string, h http.Header) Claim
	// Editable reports whether a request body of the family, split into
	// its top-level members, is one the proxy edits: one that carries
	// the whole history (a Responses body with store false and no
	// previous_response_id; every body of the other families).
	Editable(b *wire.Body) bool
	// ReadEvent reads the usage of one event of an answer's stream into
	// r (its data, as wire.SSE delivers it), in order.
	ReadEvent(r *wire.UsageReader, data []byte)
	// ReadWhole reads the usage of a whole (non-streamed) JSON answer
	// into r.
	ReadWhole(r *wire.UsageReader, answer []byte)
	// Terminal reports whether an event of a stream, whose data is data,
	// is the answer's last (Anthropic's message_stop, the chat stream's
	// [DONE]); final reports that the event that completes the usage was
	// read (wire.UsageReader.Final), which some families' last event is.
	Terminal(data []byte, final bool) bool
	// ErrorBody returns an error answer's body in the shape the family's
	// clients parse, a JSON object and a newline.
	ErrorBody(e Error) []byte
}

// Info is what a family is, as data.
type Info struct {
	// Name names the family: the proxy's API ("anthropic",
	// "openai-chat", "openai-responses"), its metrics' api label and its
	// ledger's API. It never changes once a session was stored under it.
	Name string
	// Provider is the provider whose upstream serves the family, whose
	// prices and prompt cache apply.
	Provider pricing.Provider
	// Endpoint is the path of the family's editable request, a POST
	// ("/v1/messages"); a family whose model is in the path
	// (ModelEndpoints) names one of its paths with a placeholder
	// ("/v1beta/models/{model}:generateContent").
	Endpoint string
	// List is the body member that holds the conversation ("messages",
	// "input"); System the one that holds the system prompt ("system",
	// "instructions").
	List, System string
	// Credentials are the headers that carry the family's credentials.
	Credentials []string
}

// Claim is how strongly a request's path and headers name a family; the
// strongest wins, ClaimNone is none.
type Claim uint8

const (
	// ClaimNone: nothing names the family.
	ClaimNone Claim = iota
	// ClaimCredential: the credentials have a shape the family's clients
	// send, which other families may share (Authorization: Bearer).
	ClaimCredential
	// ClaimHint: a header the family's clients alone send
	// (Anthropic-Version), or a prefix of the family's paths.
	ClaimHint
	// ClaimPath: the path names one of the family's endpoints.
	ClaimPath
)

// Error is an error the proxy answers with itself, before or instead of
// the upstream. A family writes what its shape holds of it.
type Error struct {
	// Type is the error's class in Anthropic's words
	// ("permission_error", "invalid_request_error").
	Type string
	// Code is its machine-readable code in OpenAI's words ("forbidden",
	// "websocket_not_supported").
	Code string
	// Message is the text the client shows.
	Message string
	// Status is the answer's HTTP status, which Google's shape repeats
	// (as its code, with the status's canonical name); 0 is 400.
	Status int
}

// Summaries is the optional ability of a family whose upstream the proxy
// asks for a summary of a conversation (the upstream summarizer): a
// request of its own, and the text of its answer.
type Summaries interface {
	// SummaryBody returns the body of a non-streamed request to the
	// family's Endpoint for model: system as its system prompt, prompt
	// as its one user message, maxTokens the answer's bound where the
	// family needs one.
	SummaryBody(model, system, prompt string, maxTokens int) []byte
	// SummaryHeader completes the headers of a summary request (copied
	// from the client's) with what the family requires.
	SummaryHeader(h http.Header)
	// AnswerParts returns the texts of a whole (non-streamed) answer, in
	// order (the caller joins them).
	AnswerParts(answer []byte) []string
}

// ModelEndpoints is the optional ability of a family whose requests name
// their model in their path, not in their body (the Gemini API's
// /v1beta/models/{model}:generateContent): every POST to a path
// EndpointModel accepts is one of its editable requests.
type ModelEndpoints interface {
	// EndpointModel reports whether path (as Claim gets it) is one of
	// the family's editable requests, and the model it names.
	EndpointModel(path string) (model string, ok bool)
}

// QueryClaimer is the optional ability of a family whose clients may
// carry their credentials in the URL's query (the Gemini API's key=):
// ClaimQuery says how strongly a request's query, with its headers,
// names the family. It reads the credentials' shape, never their values.
// The Registry takes the stronger of it and Claim.
type QueryClaimer interface {
	ClaimQuery(query url.Values, h http.Header) Claim
}

// ArrayStreamer is the optional ability of a family whose streamed
// answers may come as a JSON array of response objects written element by
// element, not as SSE (the Gemini API's streamGenerateContent without
// alt=sse): the proxy then reads such an answer with wire.JSONArray, each
// element an event for ReadEvent and Terminal.
type ArrayStreamer interface {
	// ArrayStream reports whether the answer to a request at path (as
	// Claim gets it) with query is such an array, when it is not SSE.
	ArrayStream(path string, query url.Values) bool
}

// ErrInvalid marks a registry that cannot be built.
var ErrInvalid = errors.New("family: invalid registry")

// Registry is the families a proxy serves, in the order that breaks ties
// between claims (the first is also where a request no family claims
// goes). Build it with NewRegistry; it is immutable and safe for
// concurrent use.
type Registry struct {
	fams []Family
}

// NewRegistry returns the registry of fams, in order. A family without a
// name or an endpoint, or with the name or the endpoint of another, is an
// error wrapping ErrInvalid.
func NewRegistry(fams ...Family) (*Registry, error) {
	if len(fams) == 0 {
		return nil, fmt.Errorf("%w: no family", ErrInvalid)
	}
	names, ends := map[string]bool{}, map[string]bool{}
	for _, f := range fams {
		in := f.Info()
		switch {
		case in.Name == "" || in.Endpoint == "":
			return nil, fmt.Errorf("%w: a family without a name or an endpoint (%q, %q)", ErrInvalid, in.Name, in.Endpoint)
		case names[in.Name]:
			return nil, fmt.Errorf("%w: two families named %q", ErrInvalid, in.Name)
		case ends[in.Endpoint]:
			return nil, fmt.Errorf("%w: two families at %s", ErrInvalid, in.Endpoint)
		}
		names[in.Name], ends[in.Endpoint] = true, true
	}
	r := &Registry{fams: append([]Family(nil), fams...)}
	for _, f := range fams {
		// A family's own request, with no header, is routed to it
		// whether it is edited or not.
		if g := r.claimed(f.Info().Endpoint, nil, http.Header{}); g.Info().Name != f.Info().Name {
			return nil, fmt.Errorf("%w: %s claims the endpoint of %s", ErrInvalid, g.Info().Name, f.Info().Name)
		}
	}
	return r, nil
}

// Route returns the family of a request: the one whose Endpoint a POST's
// path is (or one of whose ModelEndpoints it is), with editable set; else
// the family with the strongest claim (the first registered of those
// tied), or the first registered when none claims it. path is unescaped,
// from /v1/ on when it holds /v1/; query is the URL's (nil for none).
func (r *Registry) Route(method, path string, query url.Values, h http.Header) (f Family, editable bool) {
	if method == http.MethodPost {
		for _, f := range r.fams {
			if f.Info().Endpoint == path {
				return f, true
			}
			if me, ok := f.(ModelEndpoints); ok {
				if _, ok := me.EndpointModel(path); ok {
					return f, true
				}
			}
		}
	}
	return r.claimed(path, query, h), false
}

// claimed returns the family with the strongest claim on a request, the
// first registered of those tied, or the first registered.
func (r *Registry) claimed(path string, query url.Values, h http.Header) Family {
	best, bestClaim := r.fams[0], ClaimNone
	for _, f := range r.fams {
		c := f.Claim(path, h)
		if qc, ok := f.(QueryClaimer); ok && len(query) > 0 {
			c = max(c, qc.ClaimQuery(query, h))
		}
		if c > bestClaim {
			best, bestClaim = f, c
		}
	}
	return best
}

// Lookup returns the family named name, or nil.
func (r *Registry) Lookup(name string) Family {
	for _, f := range r.fams {
		if f.Info().Name == name {
			return f
		}
	}
	return nil
}

// All returns the families, in order; the caller must not modify it.
func (r *Registry) All() []Family { return r.fams }
