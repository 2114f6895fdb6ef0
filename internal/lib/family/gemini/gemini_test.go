package gemini_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/familytest"
	"github.com/agentctx/agentctx/internal/lib/family/gemini"
	"github.com/agentctx/agentctx/pricing"
)

// The chunks of an answer as the API (and the fake upstream) writes them:
// the prompt's count in every chunk, the whole usage in the last, with
// its finishReason.
var chunks = []string{
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"usageMetadata":{"promptTokenCount":9000,"totalTokenCount":9000},"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9000,"candidatesTokenCount":30,"totalTokenCount":9150,"cachedContentTokenCount":8192,"thoughtsTokenCount":120},"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
}

func TestFamily(t *testing.T) {
	whole := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9000,"candidatesTokenCount":30,"totalTokenCount":9150,"cachedContentTokenCount":8192,"thoughtsTokenCount":120}}`
	familytest.Run(t, gemini.Family{}, familytest.Fixtures{
		Stream:     [][]byte{[]byte(chunks[0]), []byte(chunks[1])},
		Array:      []byte("[" + strings.Join(chunks, ",\r\n") + "]"),
		ArrayPath:  "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
		ArrayQuery: url.Values{},
		Whole:      []byte(whole),
		Usage:      pricing.GoogleUsage(9000, 8192, 30, 120),
		Uneditable: [][]byte{[]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)},
	})
}

func TestModelMethod(t *testing.T) {
	for path, want := range map[string]string{
		"/v1beta/models/gemini-2.5-pro:generateContent":                "gemini-2.5-pro generateContent",
		"/v1/models/gemini-2.5-flash:streamGenerateContent":            "gemini-2.5-flash streamGenerateContent",
		"/v1alpha/models/gemini-3-pro-preview:countTokens":             "gemini-3-pro-preview countTokens",
		"/v1beta/models/gemini-2.5-pro":                                "",
		"/v1beta/models/:generateContent":                              "",
		"/v1beta/models/x:":                                            "",
		"/v1beta/models/a/b:generateContent":                           "",
		"/v1beta/tunedModels/t:generateContent":                        "",
		"/v2/models/gemini-2.5-pro:generateContent":                    "",
		"/gemini/v1beta/models/gemini-2.5-pro:generateContent":         "", // the proxy cuts a prefix first
		"/v1/projects/p/locations/l/models/gemini-2.5:generateContent": "",
	} {
		model, method, ok := gemini.ModelMethod(path)
		if got := strings.TrimSpace(model + " " + method); ok != (want != "") || ok && got != want {
			t.Errorf("ModelMethod(%s) = %q, %q, %v; want %q", path, model, method, ok, want)
		}
	}
	f := gemini.Family{}
	if m, ok := f.EndpointModel("/v1beta/models/gemini-2.5-flash:countTokens"); ok {
		t.Errorf("countTokens is an endpoint (%q): it has no usage", m)
	}
	if m, ok := f.EndpointModel("/v1beta/models/gemini-2.5-flash:streamGenerateContent"); !ok || m != "gemini-2.5-flash" {
		t.Errorf("EndpointModel(stream) = %q, %v", m, ok)
	}
	if f.ArrayStream("/v1beta/models/m:streamGenerateContent", url.Values{"alt": {"sse"}}) || f.ArrayStream("/v1beta/models/m:generateContent", nil) {
		t.Error("an SSE stream or a whole answer is an array stream")
	}
}

// The key= query names the family only when no other family's
// credentials are there; the header always does, as a hint.
func TestClaims(t *testing.T) {
	f := gemini.Family{}
	key := url.Values{"key": {"k"}}
	for _, tc := range []struct {
		q    url.Values
		h    http.Header
		want family.Claim
	}{
		{key, http.Header{}, family.ClaimHint},
		{key, http.Header{"X-Api-Key": {"a"}}, family.ClaimNone},
		{key, http.Header{"Authorization": {"Bearer b"}}, family.ClaimNone},
		{url.Values{"alt": {"sse"}}, http.Header{}, family.ClaimNone},
	} {
		if got := f.ClaimQuery(tc.q, tc.h); got != tc.want {
			t.Errorf("ClaimQuery(%v, %v) = %d, want %d", tc.q, tc.h, got, tc.want)
		}
	}
	if c := f.Claim("/v1/models", http.Header{"X-Goog-Api-Key": {"k"}}); c != family.ClaimHint {
		t.Errorf("Claim(x-goog-api-key) = %d", c)
	}
}

// Errors are Google's: the status's code and canonical name, as Gemini
// CLI prints them ("[API Error: <message> (Status: <status>)]").
func TestErrorBody(t *testing.T) {
	for status, name := range map[int]string{0: "INVALID_ARGUMENT", 400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 426: "FAILED_PRECONDITION",
		429: "RESOURCE_EXHAUSTED", 502: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED", 500: "INTERNAL"} {
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		b := gemini.Family{}.ErrorBody(family.Error{Type: "permission_error", Message: "no", Status: status})
		want := status
		if want == 0 {
			want = 400
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != want || e.Error.Status != name || e.Error.Message != "no" {
			t.Errorf("status %d: %s (%v)", status, b, err)
		}
	}
}
