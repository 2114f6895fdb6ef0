package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// oldRoute is the route the proxy took before the families
// (internal/lib/family) said it: openai reports the OpenAI upstream, api
// the editable API.
func oldRoute(method, rest string, h http.Header) (openai bool, api API) {
	switch {
	case strings.HasSuffix(rest, "/chat/completions"), strings.HasSuffix(rest, "/responses"),
		strings.HasPrefix(rest, "/v1/responses/"), strings.HasPrefix(rest, "/v1/chat/"):
		openai = true
	case strings.HasPrefix(rest, "/v1/messages"), h.Get("Anthropic-Version") != "", h.Get("X-Api-Key") != "":
	case strings.HasPrefix(strings.ToLower(h.Get("Authorization")), "bearer "):
		openai = true
	}
	if method == http.MethodPost {
		switch rest {
		case "/v1/messages":
			api = APIAnthropic
		case "/v1/chat/completions":
			api = APIChat
		case "/v1/responses":
			api = APIResponses
		}
	}
	return openai, api
}

// The families route every request as the proxy's own rules did: the same
// upstream, the same editable API, for every path and credential shape.
func TestFamiliesRouteAsBefore(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/v1/messages", "/v1/messages/count_tokens", "/v1/messages/batches", "/v1/chat/completions",
		"/v1/chat/other", "/v1/responses", "/v1/responses/resp_1", "/v1/responses/compact", "/v1/models", "/v1/messages/responses",
		"/v1/messages/chat/completions", "/x/chat/completions", "/v1/embeddings", "/", "/health", "/v1/", "/openai/v1/responses"}
	headers := []http.Header{{}, {"Anthropic-Version": {"2023-06-01"}}, {"X-Api-Key": {"k"}}, {"Authorization": {"Bearer t"}},
		{"Authorization": {"bearer t"}}, {"Authorization": {"Basic x"}}, {"Authorization": {"Bearer t"}, "Anthropic-Version": {"v"}}}
	for _, m := range []string{http.MethodPost, http.MethodGet} {
		for _, p := range paths {
			for _, h := range headers {
				r, _ := http.NewRequest(m, "http://proxy"+p, nil)
				r.Header = h
				rt := s.route(r)
				openai, api := oldRoute(m, rt.path, h)
				if (rt.upstream == s.openai) != openai || rt.api != api {
					t.Errorf("%s %s %v: openai %v, api %q; before: %v, %q", m, p, h, rt.upstream == s.openai, rt.api, openai, api)
				}
				if rt.upstream != s.openai && rt.upstream != s.anthropic {
					t.Errorf("%s %s %v: an upstream of neither", m, p, h)
				}
			}
		}
	}
}

// Every family's credentials are among those the fallback session key
// hashes (conversationHash), so that two users of a family who start alike
// are two sessions.
func TestFamiliesCredentialsHashed(t *testing.T) {
	for _, f := range families.All() {
		for _, c := range f.Info().Credentials {
			a, b := http.Header{c: {"one"}}, http.Header{c: {"two"}}
			body := &body{}
			if conversationHash(a, body) == conversationHash(b, body) {
				t.Errorf("%s: the fallback key does not hash %s", f.Info().Name, c)
			}
		}
	}
}

// The Gemini API's requests route to the Gemini family and upstream: its
// model methods under /v1beta, /v1 and /v1alpha (and under a path
// prefix), generateContent and streamGenerateContent as its API with the
// model of the path, an array stream without alt=sse; its other requests
// (countTokens, the model list) unedited; a key in the query or the
// x-goog-api-key header names it. TestFamiliesRouteAsBefore keeps the
// other paths as they were.
func TestGeminiRoutes(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	goog := http.Header{"X-Goog-Api-Key": {"k"}}
	for _, tc := range []struct {
		method, url string
		h           http.Header
		api         API
		path, model string
		array       bool
	}{
		{"POST", "/v1beta/models/gemini-2.5-pro:generateContent", goog, APIGemini, "/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro", false},
		{"POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", goog, APIGemini, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro", false},
		{"POST", "/v1beta/models/gemini-3-pro-preview:streamGenerateContent", goog, APIGemini, "/v1beta/models/gemini-3-pro-preview:streamGenerateContent", "gemini-3-pro-preview", true},
		{"POST", "/v1/models/gemini-2.5-flash:generateContent?key=k", nil, APIGemini, "/v1/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", false},
		{"POST", "/v1alpha/models/gemini-2.5-flash:generateContent", nil, APIGemini, "/v1alpha/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", false},
		{"POST", "/gemini/v1beta/models/gemini-2.5-flash:generateContent", goog, APIGemini, "/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:countTokens", goog, "", "/v1beta/models/gemini-2.5-flash:countTokens", "", false},
		{"GET", "/v1beta/models", goog, "", "/v1beta/models", "", false},
		{"GET", "/v1/models?key=k", nil, "", "/v1/models", "", false},
		{"GET", "/v1/models", goog, "", "/v1/models", "", false},
	} {
		r, _ := http.NewRequest(tc.method, "http://proxy"+tc.url, nil)
		r.Header = tc.h
		rt := s.route(r)
		if rt.upstream != s.gemini || rt.api != tc.api || rt.path != tc.path || rt.model != tc.model || rt.array != tc.array {
			t.Errorf("%s %s: gemini upstream %v, api %q, path %s, model %q, array %v; want %q, %s, %q, %v",
				tc.method, tc.url, rt.upstream == s.gemini, rt.api, rt.path, rt.model, rt.array, tc.api, tc.path, tc.model, tc.array)
		}
	}
	if s.gemini.String() != DefaultGeminiURL {
		t.Errorf("the default Gemini upstream is %s", s.gemini)
	}
}
