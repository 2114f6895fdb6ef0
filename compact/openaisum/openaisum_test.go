package openaisum_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/compact/openaisum"
)

const testKey = "sk-test-SECRET-0123456789"

// reply is one scripted answer of the fake Chat Completions API.
type reply struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration
}

func textReply(s string) reply {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1763795640, "model": "gpt-4.1-mini",
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": s, "refusal": nil},
		}},
		"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
	})
	return reply{status: 200, body: string(b)}
}

func errorReply(status int, code string, header map[string]string) reply {
	return reply{status: status, header: header, body: `{"error":{"message":"scripted failure","type":"` + code + `","param":null,"code":"` + code + `"}}`}
}

// fakeAPI speaks the OpenAI Chat Completions wire format from a script and
// records the requests.
type fakeAPI struct {
	t      *testing.T
	mu     sync.Mutex
	script []reply
	reqs   []map[string]any
	heads  []http.Header
	paths  []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.heads = append(f.heads, r.Header.Clone())
	f.paths = append(f.paths, r.URL.Path)
	rep := f.script[min(n, len(f.script)-1)]
	f.mu.Unlock()
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func (f *fakeAPI) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// history is an OpenAI-shaped session whose middle holds a failed call.
func history() []agentctx.Message {
	msgs, err := agentctx.UnmarshalMessages([]byte(`[
		{"role":"system","content":"You are a coding agent."},
		{"role":"user","content":"Fix the build. ` + strings.Repeat("context ", 300) + `"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"go build ./...\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"Error: main.go:3: undefined: x"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"go build -v ./...\"}"}}]},
		{"role":"tool","tool_call_id":"c2","content":"` + strings.Repeat("build line\\n", 200) + `"},
		{"role":"assistant","content":"Done."}
	]`))
	if err != nil {
		panic(err)
	}
	return msgs
}

func run(t *testing.T, script []reply, attemptTimeout time.Duration) (*compact.Result, *fakeAPI, string, error) {
	t.Helper()
	api := &fakeAPI{t: t, script: script}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sum, err := openaisum.New(openaisum.Options{APIKey: testKey, BaseURL: srv.URL + "/v1", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compact.Compact(context.Background(), history(), compact.Options{
		Limit: 500, Summarizer: sum, NoArchive: true, Logger: log,
		Backoff:        func(int) time.Duration { return time.Millisecond },
		AttemptTimeout: attemptTimeout,
	})
	if strings.Contains(logs.String(), testKey) {
		t.Errorf("the API key was logged:\n%s", logs.String())
	}
	return res, api, logs.String(), err
}

func TestOpenAIWire(t *testing.T) {
	res, api, _, err := run(t, []reply{textReply(compact.SummaryTitle + "\n## Goals and key decisions\n- Fix the build.")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || api.calls() != 1 {
		t.Fatalf("compacted %v after %d calls", res.Compacted, api.calls())
	}
	if want := compact.SummaryTitle + "\n## Goals and key decisions\n- Fix the build."; res.Summary != want {
		t.Errorf("summary = %q, want %q", res.Summary, want)
	}
	req, h := api.reqs[0], api.heads[0]
	if api.paths[0] != "/v1/chat/completions" {
		t.Errorf("path = %s, want /v1/chat/completions", api.paths[0])
	}
	if h.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("Authorization = %q", h.Get("Authorization"))
	}
	if req["model"] != openaisum.DefaultModel || req["temperature"] != 0.0 || req["max_tokens"] != float64(openaisum.DefaultMaxTokens) {
		t.Errorf("model %v temperature %v max_tokens %v", req["model"], req["temperature"], req["max_tokens"])
	}
	for _, k := range []string{"tools", "tool_choice", "stream"} {
		if _, ok := req[k]; ok {
			t.Errorf("the request has %q", k)
		}
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages = %v", req["messages"])
	}
	sys, user := msgs[0].(map[string]any), msgs[1].(map[string]any)
	if sys["role"] != "system" || sys["content"] != compact.SystemPrompt {
		t.Errorf("system message = %v", sys)
	}
	content, _ := user["content"].(string)
	if user["role"] != "user" || !strings.Contains(content, "Fix the build.") || !strings.Contains(content, "## Errors and fixes") ||
		!strings.Contains(content, `<tool_result id="c1" status="error">Error: main.go:3`) {
		t.Errorf("user message = %.400s", content)
	}
	// The prompt asks for the sections of the extractive summary; the
	// calls are readable, not JSON (issue 14).
	for _, w := range []string{"## User requests", "## Key identifiers", "verbatim", "[call c1] shell(cmd: go build ./...)"} {
		if !strings.Contains(content, w) {
			t.Errorf("user message lacks %q", w)
		}
	}
	if strings.Contains(content, `{"cmd"`) {
		t.Error("a tool input is shown as JSON")
	}
}

func TestOpenAIFailures(t *testing.T) {
	tests := []struct {
		name      string
		script    []reply
		timeout   time.Duration
		calls     int
		compacted bool
		status    int
	}{
		{"429 then success", []reply{errorReply(429, "rate_limit_exceeded", map[string]string{"Retry-After-Ms": "5"}), textReply("S")}, 0, 2, true, 0},
		{"500 then success", []reply{errorReply(500, "server_error", nil), textReply("S")}, 0, 2, true, 0},
		{"timeout then success", []reply{{delay: 5 * time.Second}, textReply("S")}, 300 * time.Millisecond, 2, true, 0},
		{"empty text is a failure", []reply{textReply("")}, 0, 3, false, 0},
		{"no choices is a failure", []reply{{status: 200, body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`}}, 0, 3, false, 0},
		{"always 503", []reply{errorReply(503, "overloaded", nil)}, 0, 3, false, 503},
		{"404 unknown model is not retried", []reply{errorReply(404, "model_not_found", nil), textReply("S")}, 0, 1, false, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, api, logs, err := run(t, tc.script, tc.timeout)
			if err != nil {
				t.Fatal(err)
			}
			if api.calls() != tc.calls || res.Compacted != tc.compacted {
				t.Fatalf("calls %d compacted %v; want %d %v\n%s", api.calls(), res.Compacted, tc.calls, tc.compacted, logs)
			}
			if !tc.compacted && res.Reason != compact.ReasonSummarizerFailed {
				t.Errorf("reason %q", res.Reason)
			}
			if tc.status != 0 && !strings.Contains(logs, "HTTP "+strconv.Itoa(tc.status)) {
				t.Errorf("failure not logged with its status:\n%s", logs)
			}
		})
	}
}

func TestOpenAIRetryAfter(t *testing.T) {
	api := &fakeAPI{t: t, script: []reply{errorReply(429, "rate_limit_exceeded", map[string]string{"Retry-After": "2"}), textReply("S")}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	m, err := openaisum.NewModel(openaisum.Options{APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), "sys", "prompt")
	var ae *compact.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.RetryAfter != 2*time.Second || !ae.Retryable() || ae.Provider != "openai" {
		t.Fatalf("error = %#v", err)
	}
	if api.calls() != 1 {
		t.Errorf("the SDK retried by itself (%d calls)", api.calls())
	}
}

func TestOpenAIRefusal(t *testing.T) {
	b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "", "refusal": "I can't."}}}})
	api := &fakeAPI{t: t, script: []reply{{status: 200, body: string(b)}}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	m, _ := openaisum.NewModel(openaisum.Options{BaseURL: srv.URL})
	if _, err := m.Complete(context.Background(), "sys", "prompt"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("error = %v, want a refusal", err)
	}
}

func TestOpenAIKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := openaisum.NewModel(openaisum.Options{}); !errors.Is(err, openaisum.ErrNoAPIKey) {
		t.Errorf("no key, no base URL: error = %v, want ErrNoAPIKey", err)
	}
	// A local server needs no key.
	api := &fakeAPI{t: t, script: []reply{textReply("S")}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	m, err := openaisum.NewModel(openaisum.Options{BaseURL: srv.URL, Model: "qwen3:8b", MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := m.Complete(context.Background(), "sys", "prompt"); err != nil || out != "S" {
		t.Fatalf("Complete = %q, %v", out, err)
	}
	if api.reqs[0]["model"] != "qwen3:8b" || api.reqs[0]["max_tokens"] != 100.0 || m.Name() != "qwen3:8b" {
		t.Errorf("model %v max_tokens %v", api.reqs[0]["model"], api.reqs[0]["max_tokens"])
	}
	// The environment supplies key and base URL.
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	m, err = openaisum.NewModel(openaisum.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(context.Background(), "sys", "prompt"); err != nil {
		t.Fatal(err)
	}
	if got := api.heads[1].Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
}
