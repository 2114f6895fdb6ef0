package family_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/anthropic"
	"github.com/agentctx/agentctx/internal/lib/family/gemini"
	"github.com/agentctx/agentctx/internal/lib/family/openaichat"
	"github.com/agentctx/agentctx/internal/lib/family/responses"
)

func registry(t *testing.T) *family.Registry {
	t.Helper()
	r, err := family.NewRegistry(anthropic.Family{}, openaichat.Family{}, responses.Family{}, gemini.Family{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A POST to a family's endpoint is that family's, editable; anything else
// goes to the strongest claim, ties to the first registered, and a request
// nobody claims to the first.
func TestRoute(t *testing.T) {
	r := registry(t)
	bearer := http.Header{"Authorization": {"Bearer t"}}
	goog := http.Header{"X-Goog-Api-Key": {"k"}}
	for _, c := range []struct {
		method, path string
		h            http.Header
		want         string
		editable     bool
	}{
		{"POST", "/v1beta/models/gemini-2.5-pro:generateContent", nil, gemini.Name, true},
		{"POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", goog, gemini.Name, true},
		{"POST", "/v1/models/gemini-2.5-pro:streamGenerateContent", bearer, gemini.Name, true}, // a path beats a credential
		{"POST", "/v1alpha/models/gemini-3-pro-preview:generateContent", nil, gemini.Name, true},
		{"POST", "/v1beta/models/gemini-2.5-flash:countTokens", goog, gemini.Name, false},
		{"GET", "/v1beta/models/gemini-2.5-flash", nil, gemini.Name, false},
		{"GET", "/v1beta/models", nil, gemini.Name, false},
		{"GET", "/v1/models", goog, gemini.Name, false},
		{"GET", "/v1/models?key=k", nil, gemini.Name, false},
		{"GET", "/v1/models?key=k", http.Header{"X-Api-Key": {"k"}}, anthropic.Name, false},
		{"GET", "/v1/models?key=k", bearer, openaichat.Name, false},
		{"POST", "/v1/messages", goog, anthropic.Name, true}, // the endpoint: the proxy refuses the key
		{"POST", "/v1beta/openai/chat/completions", bearer, openaichat.Name, false},
		{"POST", "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-pro:generateContent", bearer, openaichat.Name, false}, // Vertex AI: not a Gemini API path
		{"POST", "/v1/messages", nil, anthropic.Name, true},
		{"POST", "/v1/chat/completions", bearer, openaichat.Name, true},
		{"POST", "/v1/responses", nil, responses.Name, true},
		{"GET", "/v1/responses", nil, responses.Name, false},
		{"GET", "/v1/responses/resp_1", nil, responses.Name, false},
		{"POST", "/v1/messages/count_tokens", bearer, anthropic.Name, false}, // a hint beats a credential
		{"POST", "/v1/messages/responses", nil, responses.Name, false},       // a path beats a hint
		{"GET", "/v1/models", bearer, openaichat.Name, false},                // a tie: the first of the two
		{"GET", "/v1/models", http.Header{"X-Api-Key": {"k"}}, anthropic.Name, false},
		{"GET", "/v1/models", nil, anthropic.Name, false}, // none: the first
	} {
		path, query, _ := strings.Cut(c.path, "?")
		q, _ := url.ParseQuery(query)
		f, editable := r.Route(c.method, path, q, c.h)
		if f.Info().Name != c.want || editable != c.editable {
			t.Errorf("Route(%s %s, %v) = %s, %v; want %s, %v", c.method, c.path, c.h, f.Info().Name, editable, c.want, c.editable)
		}
	}
	if f := r.Lookup(responses.Name); f == nil || f.Info().Name != responses.Name {
		t.Errorf("Lookup(%s) = %v", responses.Name, f)
	}
	if f := r.Lookup("vertex"); f != nil {
		t.Errorf("Lookup(vertex) = %v", f)
	}
}

// claimsAll is a family that claims every path as its own.
type claimsAll struct{ openaichat.Family }

func (claimsAll) Info() family.Info {
	in := openaichat.Family{}.Info()
	in.Name, in.Endpoint = "greedy", "/v1/greedy"
	return in
}
func (claimsAll) Claim(string, http.Header) family.Claim { return family.ClaimPath }

func TestNewRegistryRefuses(t *testing.T) {
	for name, fams := range map[string][]family.Family{
		"none":              nil,
		"a name twice":      {anthropic.Family{}, anthropic.Family{}},
		"an endpoint taken": {claimsAll{}, anthropic.Family{}},
	} {
		if _, err := family.NewRegistry(fams...); !errors.Is(err, family.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}
