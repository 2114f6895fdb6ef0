package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A request of an API family the proxy does not serve is refused at once,
// never forwarded to another provider with its credentials (issue 24:
// Gemini CLI's generateContent with x-goog-api-key went to the Anthropic
// upstream), and refused so that its client gives up at once with the
// message (issue 47.1: Gemini CLI retried the 501 10 times over 217 s):
// one 400, in the error shape the family's clients parse, naming the
// family and what would serve it, with X-Should-Retry: false. The Gemini
// API is served (TestGeminiThroughTheProxy); a Google key or a Gemini path
// on a request of another family is still refused, as are Vertex AI's
// Gemini models.
func TestForeignAPIRefused(t *testing.T) {
	const secret = "AIza-secret-key"
	var forwarded atomic.Int32
	base := newProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { forwarded.Add(1) }), nil)
	type googleError struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		family             string
		google             bool // the error in Google's shape, else Bedrock's
	}{
		{"a google key on /v1/messages", "POST", "/v1/messages", map[string]string{"X-Goog-Api-Key": secret}, "Gemini API", true},
		{"a google key on /v1/responses", "POST", "/v1/responses?key=" + secret, nil, "Gemini API", true},
		{"google's openai-compatible endpoint", "POST", "/v1beta/openai/chat/completions", map[string]string{"Authorization": "Bearer " + secret}, "Gemini API", true},
		{"vertex gemini", "POST", "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent", map[string]string{"Authorization": "Bearer ya29." + secret}, "Vertex AI", true},
		{"vertex anthropic stream", "POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:streamRawPredict", map[string]string{"Authorization": "Bearer ya29." + secret}, "Vertex AI", true},
		{"vertex openai-compatible", "POST", "/v1/projects/p/locations/global/endpoints/openapi/chat/completions", map[string]string{"Authorization": "Bearer ya29." + secret}, "Vertex AI", true},
		{"bedrock invoke stream", "POST", "/model/anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream", map[string]string{"Authorization": "AWS4-HMAC-SHA256 Credential=AKIA/" + secret}, "Amazon Bedrock", false},
		{"bedrock converse, no signature", "POST", "/model/anthropic.claude-sonnet-4-5-v1:0/converse", nil, "Amazon Bedrock", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("status %d, X-Should-Retry %q; want 400, false: %s", resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
			}
			var msg string
			if tc.google {
				var e googleError
				if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != 400 || e.Error.Status != "FAILED_PRECONDITION" {
					t.Errorf("not a Google error of code 400, FAILED_PRECONDITION: %v: %s", err, body)
				}
				msg = e.Error.Message
			} else {
				var e struct{ Message string }
				if err := json.Unmarshal(body, &e); err != nil || resp.Header.Get("X-Amzn-Errortype") != "ValidationException" {
					t.Errorf("not a Bedrock ValidationException (X-Amzn-Errortype %q): %v: %s", resp.Header.Get("X-Amzn-Errortype"), err, body)
				}
				msg = e.Message
			}
			for _, want := range []string{tc.family, "nothing was forwarded", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message does not say %q: %q", want, msg)
				}
			}
			if strings.Contains(string(body), secret) {
				t.Errorf("the refusal repeats the credentials: %s", body)
			}
		})
	}
	if n := forwarded.Load(); n != 0 {
		t.Fatalf("%d requests of another API were forwarded", n)
	}
}

// A websocket upgrade is refused with 426 (issue 47.1): Codex, whose
// Responses websocket transport is on by default for its own provider,
// falls back to HTTP at once on a 426 only, and retries any other status
// (the 501 it had) with backoff first. The error is in the shape of the
// API the path names; nothing is forwarded.
func TestWebsocketUpgradeRefusedWith426(t *testing.T) {
	var forwarded atomic.Int32
	base := newProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { forwarded.Add(1) }), nil)
	for _, tc := range []struct {
		path, connection, want string // want: a member of the error in the API's shape
	}{
		{"/v1/responses", "Upgrade", `"code":"websocket_not_supported"`},
		{"/backend-api/codex/v1/responses", "keep-alive, Upgrade", `"code":"websocket_not_supported"`},
		{"/v1/messages", "Upgrade", `"type":"error"`},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+tc.path, nil)
		req.Header.Set("Connection", tc.connection)
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", tc.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusUpgradeRequired || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), "websocket") {
			t.Errorf("%s: status %d, want 426 with %s: %s", tc.path, resp.StatusCode, tc.want, body)
		}
	}
	if n := forwarded.Load(); n != 0 {
		t.Fatalf("%d upgrade requests were forwarded", n)
	}
}
