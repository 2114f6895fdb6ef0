package fakeupstream_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

func do(t *testing.T, url, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRejectsWhatTheAPIRejects(t *testing.T) {
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{ContextWindow: 100}))
	defer srv.Close()
	cc := `"cache_control":{"type":"ephemeral"}`
	cc1h := `"cache_control":{"type":"ephemeral","ttl":"1h"}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		reason           string
	}{
		{"valid", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 200, ""},
		{"unanswered tool_use", "/v1/messages", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]},{"role":"user","content":"y"}]}`, 400, "without `tool_result`"},
		{"orphan tool_result", "/v1/messages", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`, 400, "unexpected `tool_use_id`"},
		{"five breakpoints", "/v1/messages", `{"system":[{"type":"text","text":"a",` + cc + `},{"type":"text","text":"b",` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a",` + cc + `},{"type":"text","text":"b",` + cc + `},{"type":"text","text":"c",` + cc + `}]}]}`, 400, "maximum of 4"},
		{"1h after 5m", "/v1/messages", `{"model":"m","system":[{"type":"text","text":"a",` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"b",` + cc1h + `}]}]}`, 400, "must not come after"},
		{"1h before 5m", "/v1/messages", `{"model":"m","system":[{"type":"text","text":"a",` + cc1h + `}],"messages":[{"role":"user","content":[{"type":"text","text":"b",` + cc + `}]}]}`, 200, ""},
		{"changed thinking prefix", "/v1/messages", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"fakesig:00"},{"type":"text","text":"a"}]},{"role":"user","content":"y"}]}`, 400, "prefix binding"},
		{"foreign signature unchecked", "/v1/messages", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"EqQB"},{"type":"text","text":"a"}]},{"role":"user","content":"y"}]}`, 200, ""},
		{"over the window", "/v1/messages", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 500) + `"}]}`, 400, "prompt is too long"},
		{"chat unanswered call", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"x"}]}`, 400, "tool_call"},
		{"responses orphan output", "/v1/responses", `{"input":[{"type":"function_call_output","call_id":"c1","output":"x"}]}`, 400, "No tool call found"},
		{"responses paired", "/v1/responses", `{"input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"x"}]}`, 200, ""},
	} {
		status, body := do(t, srv.URL, tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: %d %s; want %d containing %q", tc.name, status, body, tc.status, tc.reason)
		}
	}
}

func TestAnthropicStreamEvents(t *testing.T) {
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Thinking: "hmm", Text: "hello there, this is long enough to split", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "ls -la /tmp"}}}}
	}}))
	defer srv.Close()
	_, body := do(t, srv.URL, "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	var events []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, e)
		}
	}
	got := strings.Join(events, " ")
	for _, want := range []string{"message_start ping content_block_start", "signature_delta", "input_json_delta", "message_delta message_stop"} {
		if !strings.Contains(got, want) && !strings.Contains(body, want) {
			t.Errorf("stream lacks %q: %s", want, got)
		}
	}
}

func TestOpenAIStreams(t *testing.T) {
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer srv.Close()
	_, chat := do(t, srv.URL, "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	if !strings.Contains(chat, `"prompt_tokens"`) || !strings.HasSuffix(chat, "data: [DONE]\n\n") {
		t.Errorf("chat stream lacks the usage chunk or [DONE]:\n%s", chat)
	}
	_, resp := do(t, srv.URL, "/v1/responses", `{"model":"m","stream":true,"input":"x"}`)
	for _, e := range []string{"response.created", "response.output_text.delta", "response.output_item.done", "response.completed"} {
		if !strings.Contains(resp, "event: "+e) {
			t.Errorf("responses stream lacks %s", e)
		}
	}
}

// A request of max_tokens 1 (what a keep-warm request asks) is answered
// cut at one token, without the script: the script's state stays where
// the model's conversation left it.
func TestShortMaxTokensLeavesTheScript(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{Script: func(*fakeupstream.Call) fakeupstream.Reply {
		calls++
		return fakeupstream.Reply{Text: "a long scripted answer"}
	}}))
	defer srv.Close()
	status, body := do(t, srv.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || calls != 0 || !strings.Contains(body, `"stop_reason":"max_tokens"`) || !strings.Contains(body, `"output_tokens":1`) {
		t.Fatalf("max_tokens 1: %d, script called %d times, %s", status, calls, body)
	}
	if status, body := do(t, srv.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`); status != 200 || calls != 1 || !strings.Contains(body, "scripted") {
		t.Fatalf("max_tokens 1000: %d, script called %d times, %s", status, calls, body)
	}
}
