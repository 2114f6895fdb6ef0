package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
)

// funcEngine is an Engine made of functions; a nil prepare returns the
// messages unchanged.
type funcEngine struct {
	prepare func(req *proxy.Request) []agentctx.Message

	mu       sync.Mutex
	calls    int
	observed []pricing.Usage
	keys     []string
}

func (e *funcEngine) Prepare(_ context.Context, req *proxy.Request) (*proxy.Prepared, error) {
	e.mu.Lock()
	e.calls++
	e.keys = append(e.keys, req.SessionKey)
	e.mu.Unlock()
	msgs := req.Document.Messages
	if e.prepare != nil {
		msgs = e.prepare(req)
	}
	return &proxy.Prepared{Messages: msgs}, nil
}

func (e *funcEngine) Observe(_ context.Context, _ string, u pricing.Usage, _ int) {
	e.mu.Lock()
	e.observed = append(e.observed, u)
	e.mu.Unlock()
}

// capture is an upstream that records what it receives and answers with
// handler (nil: 200 "{}").
type capture struct {
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  [][]byte
	handler http.HandlerFunc
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	if c.handler != nil {
		r.Body = io.NopCloser(bytes.NewReader(b))
		c.handler(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}")
}

func (c *capture) last(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return c.reqs[len(c.reqs)-1], c.bodies[len(c.bodies)-1]
}

func newProxy(t *testing.T, up http.Handler, engine proxy.Engine) string {
	t.Helper()
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	srv, err := proxy.New(proxy.Options{Engine: engine, AnthropicURL: us.URL, OpenAIURL: us.URL + "/v1", GeminiURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	return ps.URL
}

func post(t *testing.T, url string, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Bodies with whitespace, unknown fields, unknown block types and signed
// thinking: an unedited request must reach the upstream byte for byte.
var (
	anthropicBody = `{ "model": "claude-x", "max_tokens": 100,
  "system": [{"type":"text","text":"sys","cache_control":{"type":"ephemeral","ttl":"1h"}}],
  "context_management": {"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
  "messages": [
    {"role": "user", "content": "hi \u00e9 <b>"},
    {"role": "assistant", "content": [{"type":"thinking","thinking":"hm","signature":"sig=="},{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"q":"x"}},{"type":"text","text":"ok"}]},
    {"role": "user", "content": [{"type":"text","text":"next","cache_control":{"type":"ephemeral"}}], "extra_field": 1}
  ],
  "tools": [{"name":"Bash","input_schema":{"type":"object"},"defer_loading":true}],
  "stream": false }`
	chatBody      = `{"model":"gpt-x","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"sh","arguments":"{\"c\":1}"}}]},{"role":"tool","tool_call_id":"call_1","content":"out"}],"stream_options":{"include_usage":true},"unknown":[1,2]}`
	responsesBody = `{"model":"gpt-x","store":false,"prompt_cache_key":"pck-1","instructions":"be brief","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"dev"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},{"type":"reasoning","id":"rs_1","encrypted_content":"xyz","summary":[]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},{"type":"function_call_output","call_id":"call_1","output":"file1\nfile2"}],"include":["reasoning.encrypted_content"]}`
)

func TestUnchangedRequestIsByteIdentical(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"anthropic", "/v1/messages?beta=true", anthropicBody},
		{"chat", "/v1/chat/completions", chatBody},
		{"responses", "/v1/responses", responsesBody},
	} {
		for _, eng := range []proxy.Engine{nil, &funcEngine{}} {
			up := &capture{}
			base := newProxy(t, up, eng)
			resp := post(t, base+tc.path, tc.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d", tc.name, resp.StatusCode)
			}
			r, got := up.last(t)
			if string(got) != tc.body {
				t.Errorf("%s (engine %v): upstream body differs from the client's:\n got %s\nwant %s", tc.name, eng != nil, got, tc.body)
			}
			if r.URL.RequestURI() != tc.path {
				t.Errorf("%s: upstream path %s, want %s", tc.name, r.URL.RequestURI(), tc.path)
			}
		}
	}
}

func TestHeadersBothWaysAndStatusVerbatim(t *testing.T) {
	up := &capture{handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", "req_123")
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	}}
	base := newProxy(t, up, &funcEngine{})
	resp := post(t, base+"/v1/messages", anthropicBody, map[string]string{
		"X-Api-Key": "sk-secret", "Anthropic-Version": "2023-06-01", "Anthropic-Beta": "context-management-2025-06-27", "X-Request-Id": "c1",
	})
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || string(got) != `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}` {
		t.Errorf("client got %d %s; want the upstream's 429 and body verbatim", resp.StatusCode, got)
	}
	if resp.Header.Get("Request-Id") != "req_123" || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("response headers not relayed: %v", resp.Header)
	}
	r, _ := up.last(t)
	for k, v := range map[string]string{"X-Api-Key": "sk-secret", "Anthropic-Version": "2023-06-01", "Anthropic-Beta": "context-management-2025-06-27", "X-Request-Id": "c1"} {
		if r.Header.Get(k) != v {
			t.Errorf("upstream header %s = %q, want %q", k, r.Header.Get(k), v)
		}
	}
}

func TestKeyNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	us := httptest.NewServer(&capture{})
	defer us.Close()
	srv, _ := proxy.New(proxy.Options{Engine: &funcEngine{}, AnthropicURL: us.URL, Logger: newLockedLogger(&logs, &mu)})
	ps := httptest.NewServer(srv)
	defer ps.Close()
	post(t, ps.URL+"/v1/messages", anthropicBody, map[string]string{"X-Api-Key": "sk-ant-SECRET", "Authorization": "Bearer sk-SECRET2"})
	post(t, ps.URL+"/v1/models", "", map[string]string{"Authorization": "Bearer sk-SECRET2"})
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("a key reached the log:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "proxy: request"); n != 2 {
		t.Errorf("%d request lines logged, want one per request:\n%s", n, logs.String())
	}
}

func TestOtherPathsPassThroughAndUpgradesAreRefused(t *testing.T) {
	up := &capture{}
	eng := &funcEngine{}
	base := newProxy(t, up, eng)
	req, _ := http.NewRequest(http.MethodHead, base+"/api/hello", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /api/hello: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, p := range []string{"/v1/messages/count_tokens", "/v1/models"} {
		resp := post(t, base+p, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", p, resp.StatusCode)
		}
		r, _ := up.last(t)
		if r.URL.Path != p {
			t.Errorf("%s reached the upstream as %s", p, r.URL.Path)
		}
	}
	if eng.calls != 0 {
		t.Errorf("the engine ran on %d pass-through requests", eng.calls)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err = http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("websocket attempt: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("websocket upgrade: status %d, want 426", resp.StatusCode)
	}
}

func TestPathPrefixAndQuery(t *testing.T) {
	up := &capture{}
	base := newProxy(t, up, &funcEngine{})
	post(t, base+"/some/prefix/v1/messages?beta=true", anthropicBody, nil)
	r, _ := up.last(t)
	if r.URL.RequestURI() != "/v1/messages?beta=true" {
		t.Errorf("upstream URI %s, want /v1/messages?beta=true", r.URL.RequestURI())
	}
}

// An Engine that replaces one tool result: the upstream body is the
// client's with that one value replaced.
func TestEditedRequestChangesOnlyTheEditedValue(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"OLD OUTPUT","x_unknown":true}]},{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}],"metadata":{"user_id":"u"}}`
	eng := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		return agentctx.MapToolResults(req.Document.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
			return agentctx.Text("NEW"), true
		})
	}}
	up := &capture{}
	base := newProxy(t, up, eng)
	post(t, base+"/v1/messages", body, nil)
	_, got := up.last(t)
	want := strings.Replace(body, `"OLD OUTPUT"`, `"NEW"`, 1)
	want = strings.Replace(want, `"NEW","x_unknown":true}`, `"NEW","x_unknown":true,"cache_control":{"type":"ephemeral"}}`, 1)
	if string(got) != want {
		t.Errorf("upstream body:\n got %s\nwant %s", got, want)
	}
}

// The breakpoint added after an edit takes a 1h TTL only when a later
// breakpoint has one, not when a later message merely holds the bytes
// "ttl":"1h" (here a tool call's arguments) outside any cache_control.
func TestAddedBreakpointTTLFromBreakpointsOnly(t *testing.T) {
	for _, tc := range []struct {
		name, lastCC, want string
	}{
		{"5m breakpoint after", `{"type":"ephemeral"}`, `{"type":"ephemeral"}`},
		{"1h breakpoint after", `{"type":"ephemeral","ttl":"1h"}`, `{"type":"ephemeral","ttl":"1h"}`},
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"OLD OUTPUT"}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"SetCache","input":{"ttl":"1h"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"set","cache_control":` + tc.lastCC + `}]}]}`
		eng := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
			return agentctx.MapToolResults(req.Document.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
				return agentctx.Text("NEW"), r.ID == "t1"
			})
		}}
		up := &capture{}
		base := newProxy(t, up, eng)
		post(t, base+"/v1/messages", body, nil)
		_, got := up.last(t)
		want := strings.Replace(body, `"OLD OUTPUT"}`, `"NEW","cache_control":`+tc.want+`}`, 1)
		if string(got) != want {
			t.Errorf("%s: upstream body:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}

func TestStreamIsRelayedAsItArrives(t *testing.T) {
	release := make(chan struct{})
	up := &capture{handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n")
		w.(http.Flusher).Flush()
		<-release // the rest only once the client has seen the first event
		io.WriteString(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n")
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":9}}\n\n")
	}}
	eng := &funcEngine{}
	base := newProxy(t, up, eng)
	resp := post(t, base+"/v1/messages", anthropicBody, nil)
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	close(release)
	if err != nil || !strings.HasPrefix(first, "event: message_start") {
		t.Fatalf("first line %q, %v", first, err)
	}
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "event: ping") || !strings.Contains(string(rest), "message_delta") {
		t.Errorf("the rest of the stream was not relayed: %q", rest)
	}
	resp.Body.Close()
	waitFor(t, func() bool { eng.mu.Lock(); defer eng.mu.Unlock(); return len(eng.observed) == 1 })
	if u := eng.observed[0]; u.Uncached != 5 || u.Output != 9 {
		t.Errorf("usage observed %+v, want input 5, output 9", u)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met")
}

func TestUsageFedBackForEveryAPI(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Text: "hello", InputTokens: 1234}
	}})
	eng := &funcEngine{}
	base := newProxy(t, fake, eng)
	for _, tc := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`},
		{"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`},
		{"/v1/responses", `{"model":"m","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]}`},
	} {
		resp := post(t, base+tc.path, tc.body, nil)
		io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", tc.path, resp.StatusCode)
		}
	}
	waitFor(t, func() bool { eng.mu.Lock(); defer eng.mu.Unlock(); return len(eng.observed) == 4 })
	for i, u := range eng.observed {
		if u.Input() != 1234 || u.Output != 10 {
			t.Errorf("request %d: usage %+v, want 1234 in, 10 out", i, u)
		}
	}
}

func TestResponsesWithServerHistoryPassThrough(t *testing.T) {
	for _, body := range []string{
		strings.Replace(responsesBody, `"store":false`, `"store":true`, 1),
		strings.Replace(responsesBody, `"store":false`, `"store":false,"previous_response_id":"resp_1"`, 1),
	} {
		eng := &funcEngine{}
		up := &capture{}
		base := newProxy(t, up, eng)
		post(t, base+"/v1/responses", body, nil)
		if _, got := up.last(t); string(got) != body || eng.calls != 0 {
			t.Errorf("engine calls %d; body changed %v", eng.calls, string(got) != body)
		}
	}
}

func TestResponsesEditReplacesOnlyOutput(t *testing.T) {
	eng := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		return agentctx.MapToolResults(req.Document.Messages, func(r agentctx.ToolResult) (agentctx.Content, bool) {
			return agentctx.Text("short"), true
		})
	}}
	up := &capture{}
	base := newProxy(t, up, eng)
	post(t, base+"/v1/responses", responsesBody, nil)
	_, got := up.last(t)
	want := strings.Replace(responsesBody, `"output":"file1\nfile2"`, `"output":"short"`, 1)
	if string(got) != want {
		t.Errorf("upstream body:\n got %s\nwant %s", got, want)
	}
}

// The session key is the client's own session or conversation id where it
// sends one, in a fixed order (the keys of the earlier rules never change:
// stored sessions are named by them); opencode's, Kilo's and Codex's
// session headers count (issue 47.2), an OpenAI user or metadata does not
// (it names a user, not a conversation).
func TestSessionKey(t *testing.T) {
	const prompt = `"messages":[{"role":"user","content":"fix the bug"}]`
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		want   string // "h-": the fallback hash
		source string
	}{
		{"claude code header", map[string]string{"X-Claude-Code-Session-Id": "cc-1", proxy.HeaderSession: "mine"}, `{"metadata":{"user_id":"{\"session_id\":\"s-json\"}"}}`, "cc-1", "x-claude-code-session-id"},
		{"metadata json", nil, `{"metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"s-json\"}"},"prompt_cache_key":"p"}`, "s-json", "metadata.user_id"},
		{"metadata legacy", nil, `{"metadata":{"user_id":"user_abc_account_x_session_1234-abcd"}}`, "1234-abcd", "metadata.user_id"},
		{"prompt cache key", map[string]string{proxy.HeaderSession: "mine"}, `{"prompt_cache_key":"pck"}`, "pck", "prompt_cache_key"},
		{"header", map[string]string{proxy.HeaderSession: "mine"}, `{"messages":[]}`, "mine", "x-agentctx-session"},
		{"opencode, Kilo: X-Session-Affinity", map[string]string{"X-Session-Affinity": "ses_a", "X-Session-Id": "dir-cache-key"}, `{` + prompt + `}`, "ses_a", "x-session-affinity"},
		{"opencode: X-Session-Id", map[string]string{"X-Session-Id": "ses_b"}, `{` + prompt + `}`, "ses_b", "x-session-id"},
		{"opencode's own providers", map[string]string{"X-Opencode-Session": "ses_c"}, `{` + prompt + `}`, "ses_c", "x-opencode-session"},
		{"codex: session_id", map[string]string{"session_id": "conv-1"}, `{"input":[{"role":"user","content":"fix the bug"}]}`, "conv-1", "session_id"},
		{"codex: prompt_cache_key first, as before", map[string]string{"session_id": "conv-1"}, `{"prompt_cache_key":"pck-1","input":[]}`, "pck-1", "prompt_cache_key"},
		{"claude code: metadata first", map[string]string{"X-Session-Id": "ses_b"}, `{"metadata":{"user_id":"{\"session_id\":\"s-json\"}"},` + prompt + `}`, "s-json", "metadata.user_id"},
		{"agentctx header first", map[string]string{proxy.HeaderSession: "mine", "X-Session-Affinity": "ses_a"}, `{` + prompt + `}`, "mine", "x-agentctx-session"},
		{"openai user and metadata are no session", nil, `{"user":"u-1","safety_identifier":"u-1","metadata":{"session_id":"m"},` + prompt + `}`, "h-", "hash"},
		{"a user_id without a session is none", nil, `{"metadata":{"user_id":"user-42"},` + prompt + `}`, "h-", "hash"},
		{"blank headers are none", map[string]string{"X-Session-Id": "  "}, `{` + prompt + `}`, "h-", "hash"},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, source := proxy.SessionKey(h, []byte(tc.body))
		if tc.want == "h-" && !strings.HasPrefix(got, "h-") || tc.want != "h-" && got != tc.want || source != tc.source {
			t.Errorf("%s: key %q (%s), want %q (%s)", tc.name, got, source, tc.want, tc.source)
		}
	}
	a, _ := proxy.SessionKey(http.Header{}, []byte(`{"system":"s","messages":[{"role":"user","content":"first"}]}`))
	b, _ := proxy.SessionKey(http.Header{}, []byte(`{"system":"s","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"x"},{"role":"user","content":"more"}]}`))
	c, _ := proxy.SessionKey(http.Header{}, []byte(`{"system":"s","messages":[{"role":"user","content":"other"}]}`))
	if a != b || a == c || !strings.HasPrefix(a, "h-") {
		t.Errorf("hash keys: %q %q %q; want the first two equal and the third different", a, b, c)
	}
	// Two users who start alike are two sessions (issue 24: they shared
	// one and recompacted each other's).
	first := []byte(`{"system":"s","messages":[{"role":"user","content":"first"}]}`)
	u1, _ := proxy.SessionKey(http.Header{"X-Api-Key": {"key-of-user-one"}}, first)
	u1again, _ := proxy.SessionKey(http.Header{"X-Api-Key": {"key-of-user-one"}}, first)
	u2, _ := proxy.SessionKey(http.Header{"X-Api-Key": {"key-of-user-two"}}, first)
	u3, _ := proxy.SessionKey(http.Header{"Authorization": {"Bearer token-three"}}, first)
	if u1 != u1again || u1 == u2 || u1 == u3 || u2 == u3 || strings.Contains(u1, "user-one") {
		t.Errorf("keys by credentials: %q %q %q %q", u1, u1again, u2, u3)
	}
}

func TestStatsEndpoint(t *testing.T) {
	base := newProxy(t, &capture{}, &funcEngine{})
	post(t, base+"/v1/messages", anthropicBody, map[string]string{proxy.HeaderSession: "s1"})
	// The exchange is recorded once the handler returns, which may be just
	// after the client has read the whole response.
	var got struct{ Sessions []proxy.SessionStats }
	for range 200 {
		resp, err := http.Get(base + proxy.StatsPath)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Sessions) > 0 && got.Sessions[0].Requests > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(got.Sessions) != 1 || got.Sessions[0].Session != "s1" || got.Sessions[0].Requests != 1 {
		t.Errorf("stats %+v", got)
	}
}

func newLockedLogger(w io.Writer, mu *sync.Mutex) *slogLogger {
	return newSlog(lockedWriter{w: w, mu: mu})
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestCacheBreaksCounted(t *testing.T) {
	base := newProxy(t, &capture{}, &funcEngine{})
	m := func(s string) string { return `{"role":"user","content":"` + s + `"}` }
	a := func(s string) string { return `{"role":"assistant","content":"` + s + `"}` }
	for _, msgs := range [][]string{
		{m("q1")},
		{m("q1"), a("a1"), m("q2")},
		{m("q1"), a("a1"), m("q2"), a("a2"), m("q3")},
		{m("q1"), a("a1"), m("CHANGED"), a("a2"), m("q3"), a("a3"), m("q4")}, // (a changed first message is another conversation)
	} {
		resp := post(t, base+"/v1/messages", `{"model":"m","messages":[`+strings.Join(msgs, ",")+`]}`, map[string]string{proxy.HeaderSession: "cb"})
		io.ReadAll(resp.Body)
	}
	resp, err := http.Get(base + proxy.StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Sessions []proxy.SessionStats }
	json.NewDecoder(resp.Body).Decode(&got)
	if len(got.Sessions) != 1 || got.Sessions[0].CacheBreaks != 1 || got.Sessions[0].Requests != 4 {
		t.Errorf("stats %+v; want 4 requests, 1 cache break", got.Sessions)
	}
}

func TestMidStreamErrorRelayed(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(*fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Error: "Overloaded"}
	}})
	base := newProxy(t, fake, &funcEngine{})
	resp := post(t, base+"/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "event: error\ndata: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"},\"type\":\"error\"}\n\n") {
		t.Errorf("status %d, stream %q; want the error event verbatim", resp.StatusCode, b)
	}
}
