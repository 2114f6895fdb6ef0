package anthropicsum_test

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
	"github.com/agentctx/agentctx/compact/anthropicsum"
)

const testKey = "sk-ant-test-SECRET-0123456789"

// reply is one scripted answer of the fake Messages API.
type reply struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration // wait before answering (or until the client gives up)
}

func textReply(s string) reply {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
		"content":     []any{map[string]any{"type": "text", "text": s}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 120, "output_tokens": 40},
	})
	return reply{status: 200, body: string(b)}
}

func errorReply(status int, typ string, header map[string]string) reply {
	return reply{status: status, header: header, body: `{"type":"error","error":{"type":"` + typ + `","message":"scripted failure"}}`}
}

// fakeAPI speaks the Anthropic Messages API wire format from a script and
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

func history() []agentctx.Message {
	msgs, err := agentctx.UnmarshalMessages([]byte(`[
		{"role":"system","content":"You are a coding agent."},
		{"role":"user","content":"Fix the build. ` + strings.Repeat("context ", 300) + `"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go build ./..."}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Exit code 1\\nmain.go:3: undefined: x"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"go build -v ./..."}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"` + strings.Repeat("build line\\n", 200) + `"}]},
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
	sum, err := anthropicsum.New(anthropicsum.Options{APIKey: testKey, BaseURL: srv.URL, Logger: log})
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

func TestAnthropicWire(t *testing.T) {
	res, api, _, err := run(t, []reply{textReply("## Goals and key decisions\n- Fix the build.")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || api.calls() != 1 {
		t.Fatalf("compacted %v after %d calls", res.Compacted, api.calls())
	}
	if want := compact.SummaryTitle + "\n\n## Goals and key decisions\n- Fix the build."; res.Summary != want {
		t.Errorf("summary = %q, want %q", res.Summary, want)
	}
	req, h := api.reqs[0], api.heads[0]
	if api.paths[0] != "/v1/messages" {
		t.Errorf("path = %s, want /v1/messages", api.paths[0])
	}
	if h.Get("X-Api-Key") != testKey || h.Get("Anthropic-Version") == "" {
		t.Errorf("headers: x-api-key %q, anthropic-version %q", h.Get("X-Api-Key"), h.Get("Anthropic-Version"))
	}
	if req["model"] != anthropicsum.DefaultModel || req["temperature"] != 0.0 || req["max_tokens"] != float64(anthropicsum.DefaultMaxTokens) {
		t.Errorf("model %v temperature %v max_tokens %v", req["model"], req["temperature"], req["max_tokens"])
	}
	if _, ok := req["tools"]; ok {
		t.Error("the request offers tools")
	}
	sys, _ := req["system"].([]any)
	if len(sys) != 1 || sys[0].(map[string]any)["text"] != compact.SystemPrompt {
		t.Errorf("system = %v", req["system"])
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages = %v", req["messages"])
	}
	m := msgs[0].(map[string]any)
	content := m["content"].([]any)[0].(map[string]any)["text"].(string)
	if m["role"] != "user" || !strings.Contains(content, "Fix the build.") || !strings.Contains(content, "## Errors and fixes") || !strings.Contains(content, `status="error"`) {
		t.Errorf("user message = %.300s", content)
	}
	// The prompt asks for the sections of the extractive summary; the
	// calls are readable, not JSON (issue 14).
	for _, w := range []string{"## User requests", "## Key identifiers", "verbatim", "[call t1] Bash(command: go build ./...)"} {
		if !strings.Contains(content, w) {
			t.Errorf("user message lacks %q", w)
		}
	}
	if strings.Contains(content, `{"command"`) {
		t.Error("a tool input is shown as JSON")
	}
}

func TestAnthropicFailures(t *testing.T) {
	tests := []struct {
		name      string
		script    []reply
		timeout   time.Duration
		calls     int
		compacted bool
		status    int
	}{
		{"429 then success", []reply{errorReply(429, "rate_limit_error", map[string]string{"Retry-After": "0"}), textReply("S")}, 0, 2, true, 0},
		{"500 then success", []reply{errorReply(500, "api_error", nil), textReply("S")}, 0, 2, true, 0},
		{"529 overloaded, twice, then success", []reply{errorReply(529, "overloaded_error", nil), errorReply(529, "overloaded_error", nil), textReply("S")}, 0, 3, true, 0},
		{"timeout then success", []reply{{delay: 5 * time.Second}, textReply("S")}, 300 * time.Millisecond, 2, true, 0},
		{"empty text is a failure", []reply{textReply("")}, 0, 3, false, 0},
		{"always 500", []reply{errorReply(500, "api_error", nil)}, 0, 3, false, 500},
		{"401 is not retried", []reply{errorReply(401, "authentication_error", nil), textReply("S")}, 0, 1, false, 401},
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

func TestAnthropicRetryAfter(t *testing.T) {
	api := &fakeAPI{t: t, script: []reply{errorReply(429, "rate_limit_error", map[string]string{"Retry-After": "1"}), textReply("S")}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	m, err := anthropicsum.NewModel(anthropicsum.Options{APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), "sys", "prompt")
	var ae *compact.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.RetryAfter != time.Second || !ae.Retryable() || ae.Provider != "anthropic" {
		t.Fatalf("error = %#v", err)
	}
	if api.calls() != 1 {
		t.Errorf("the SDK retried by itself (%d calls)", api.calls())
	}
}

func TestAnthropicOptions(t *testing.T) {
	api := &fakeAPI{t: t, script: []reply{textReply("S")}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	m, err := anthropicsum.NewModel(anthropicsum.Options{Model: "claude-test", MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "claude-test" {
		t.Errorf("Name = %q", m.Name())
	}
	if _, err := m.Complete(context.Background(), "sys", "prompt"); err != nil {
		t.Fatal(err)
	}
	if api.heads[0].Get("X-Api-Key") != testKey || api.reqs[0]["model"] != "claude-test" || api.reqs[0]["max_tokens"] != 100.0 {
		t.Errorf("environment not used: key %q model %v max_tokens %v", api.heads[0].Get("X-Api-Key"), api.reqs[0]["model"], api.reqs[0]["max_tokens"])
	}
	if _, err := anthropicsum.NewModel(anthropicsum.Options{MaxTokens: -1}); err == nil {
		t.Error("negative MaxTokens accepted")
	}
}

func TestAnthropicNoCredentials(t *testing.T) {
	api := &fakeAPI{t: t, script: []reply{textReply("S")}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_CONFIG_DIR"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	m, err := anthropicsum.NewModel(anthropicsum.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), "sys", "prompt")
	var ae *compact.APIError
	if !errors.As(err, &ae) || ae.Retryable() {
		t.Fatalf("error = %v; want a final *compact.APIError", err)
	}
	if api.calls() != 0 {
		t.Errorf("a request was sent without credentials")
	}
}
