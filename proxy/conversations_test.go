package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// subagentTurns is the body of a Claude Code subagent (its Task tool): a
// system prompt and a first message of its own, n tool rounds.
func subagentTurns(agent, n int) string {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"Find the files of part %d."}]}`, agent)}
	for i := 0; i < n; i++ {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"a%d-%d","name":"Bash","input":{"command":"ls"}}]}`, agent, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a%d-%d","content":"file-%d.go"}]}`, agent, i, i))
	}
	return `{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"system":[{"type":"text","text":"You are a subagent: search the code."}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

func drain(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d", what, resp.StatusCode)
	}
}

// Claude Code's subagents and side requests send the main conversation's
// X-Claude-Code-Session-Id (issue 49.1). Each is a conversation of its
// own: none may drop the main conversation's compaction, which would
// compact it again on its next request (a billed summary request and a
// cache break each time). The main conversation, growing past the limit
// with subagent requests between its own, compacts once.
func TestSubagentsDoNotRecompactTheMainConversation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		subagents int // subagent requests after each main request once it compacted
		rounds    int // a subagent's tool rounds
	}{
		{"one subagent request each turn", 1, 1},
		{"three subagents, longer", 3, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
				if c.Header.Get(proxy.HeaderSummary) != "" {
					return fakeupstream.Reply{Text: compact.SummaryTitle + "\n\n## Goals and key decisions\n- list the files"}
				}
				return fakeupstream.Reply{Text: "ok"}
			}})
			up := startUpstream(t, fake)
			e := pipelineEngine(t, proxy.PipelineOptions{
				Pipeline:   pipeline.Options{NoPrune: true, Compact: compact.Options{Limit: 8000, MaxRetries: -1}, Workspace: workspace.Options{InlineLimit: 100000}},
				Summarizer: proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: up}),
			})
			srv, base := startProxy(t, up, e)
			headers := map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01", "X-Claude-Code-Session-Id": "cc-main"}
			summaries := func() int {
				n := 0
				for _, r := range fake.Records() {
					if r.Header.Get(proxy.HeaderSummary) != "" {
						n++
					}
				}
				return n
			}
			// After its compaction, the main conversation runs on for as
			// many turns as it stays below the trigger alone.
			const after = 3
			compactedAt, agent := 0, 0
			for n := 1; n <= 40 && (compactedAt == 0 || n <= compactedAt+after); n++ {
				drain(t, post(t, base+"/v1/messages", cachedTurns(n, 1500), headers), fmt.Sprintf("main turn %d", n))
				if compactedAt == 0 && summaries() > 0 {
					compactedAt = n
				}
				if compactedAt == 0 {
					continue
				}
				for i := 0; i < tc.subagents; i++ {
					agent++
					drain(t, post(t, base+"/v1/messages", subagentTurns(agent, tc.rounds), headers), fmt.Sprintf("subagent %d", agent))
				}
			}
			if compactedAt == 0 {
				t.Fatal("the main conversation never compacted")
			}
			if got := summaries(); got != 1 {
				t.Errorf("%d summary requests, want 1: the subagents' requests recompacted the main conversation", got)
			}
			// The main conversation keeps the client's session id.
			main := 0
			for _, st := range srv.Stats() {
				if st.Session == "cc-main" {
					main = st.Requests
				}
			}
			if main != compactedAt+after {
				t.Errorf("session cc-main has %d requests, want the main conversation's %d", main, compactedAt+after)
			}
			for _, r := range fake.Records() {
				if r.Rejected != "" {
					t.Errorf("the upstream rejected a request: %s", r.Rejected)
				}
			}
		})
	}
}

// sessionsOf returns the proxy's sessions and their requests, sorted by
// session key.
func sessionsOf(srv *proxy.Server) []string {
	var out []string
	for _, st := range srv.Stats() {
		out = append(out, fmt.Sprintf("%s:%d", st.Session, st.Requests))
	}
	sort.Strings(out)
	return out
}

// waitRequests waits until the proxy's statistics count n requests (an
// exchange is recorded once its handler returns).
func waitRequests(t *testing.T, srv *proxy.Server, n int) {
	t.Helper()
	waitFor(t, func() bool {
		got := 0
		for _, st := range srv.Stats() {
			got += st.Requests
		}
		return got >= n
	})
}

// opencode, Kilo and Continue mark the first user message with
// cache_control while it is the last message, that is on the first
// request only, and the first reply while it is among the last two (issue
// 47.2): the fallback session key hashed the mark, and one conversation
// showed as two sessions. opencode and Kilo mark the same messages with
// copilot_cache_control on a GitHub Copilot provider, at the message's
// level. Nor do whitespace and string escapes, which a client may write
// differently from one request to the next, change the key.
func TestSessionKeyIgnoresClientMarks(t *testing.T) {
	const cc = `"cache_control":{"type":"ephemeral"}`
	const copilot = `"copilot_cache_control":{"type":"ephemeral"}`
	for _, tc := range []struct {
		name   string
		path   string
		bodies []string // the requests of one conversation, in order
	}{
		{"anthropic, the first block marked", "/v1/messages", []string{
			`{"model":"m","max_tokens":100,"system":[{"type":"text","text":"You are opencode."` + `,` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"fix the bug",` + cc + `}]}]}`,
			`{"model":"m","max_tokens":100,"system":[{"type":"text","text":"You are opencode."}],"messages":[{"role":"user","content":[{"type":"text","text":"fix the bug"}]},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":[{"type":"text","text":"go on",` + cc + `}]}]}`}},
		{"anthropic, a string content marked as a block", "/v1/messages", []string{
			`{"model":"m","max_tokens":100,"system":"You are Continue.","messages":[{"role":"user","content":[{"type":"text","text":"fix the bug",` + cc + `}]}]}`,
			`{"model":"m","max_tokens":100,"system":"You are Continue.","messages":[{"role":"user","content":"fix the bug"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"go on",` + cc + `}]}]}`}},
		{"anthropic, the first reply marked on the second request only", "/v1/messages", []string{
			`{"model":"m","max_tokens":100,"system":"You are Kilo.","messages":[{"role":"user","content":[{"type":"text","text":"fix the bug",` + cc + `}]}]}`,
			`{"model":"m","max_tokens":100,"system":"You are Kilo.","messages":[{"role":"user","content":"fix the bug"},{"role":"assistant","content":[{"type":"text","text":"ok",` + cc + `}]},{"role":"user","content":[{"type":"text","text":"go on",` + cc + `}]}]}`,
			`{"model":"m","max_tokens":100,"system":"You are Kilo.","messages":[{"role":"user","content":"fix the bug"},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":"go on"},{"role":"assistant","content":[{"type":"text","text":"done",` + cc + `}]},{"role":"user","content":[{"type":"text","text":"thanks",` + cc + `}]}]}`}},
		{"chat completions, system message marked", "/v1/chat/completions", []string{
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"You are Kilo.",` + cc + `}]},{"role":"user","content":[{"type":"text","text":"fix the bug",` + cc + `}]}]}`,
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"You are Kilo."}]},{"role":"user","content":[{"type":"text","text":"fix the bug"}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`}},
		{"chat completions, copilot_cache_control on the messages", "/v1/chat/completions", []string{
			`{"model":"m","messages":[{"role":"system","content":"You are opencode.",` + copilot + `},{"role":"user","content":"fix the bug",` + copilot + `}]}`,
			`{"model":"m","messages":[{"role":"system","content":"You are opencode.",` + copilot + `},{"role":"user","content":"fix the bug"},{"role":"assistant","content":"ok",` + copilot + `},{"role":"user","content":"go on",` + copilot + `}]}`,
			`{"model":"m","messages":[{"role":"system","content":"You are opencode.",` + copilot + `},{"role":"user","content":"fix the bug"},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"},{"role":"assistant","content":"done",` + copilot + `},{"role":"user","content":"thanks",` + copilot + `}]}`}},
		{"chat completions, copilot_cache_control on a part", "/v1/chat/completions", []string{
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"You are Kilo.",` + copilot + `}]},{"role":"user","content":[{"type":"text","text":"fix the bug",` + copilot + `}]}]}`,
			`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"You are Kilo."}]},{"role":"user","content":"fix the bug"},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`}},
		{"whitespace and escapes", "/v1/messages", []string{
			`{"model":"m","max_tokens":100,"system":"You are \u00e9t\u00e9.","messages":[{"role":"user","content":[{"type":"text","text":"fix \"the\" bug"}]}]}`,
			"{\n  \"model\": \"m\", \"max_tokens\": 100,\n  \"system\": \"You are été.\",\n  \"messages\": [\n    {\"role\": \"user\", \"content\": [ {\"type\": \"text\", \"text\": \"fix \\\"the\\\" bug\"} ]},\n    {\"role\": \"assistant\", \"content\": \"ok\"},\n    {\"role\": \"user\", \"content\": \"go on\"}\n  ]\n}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"X-Api-Key": {"k"}}
			k0, _ := proxy.SessionKey(h, []byte(tc.bodies[0]))
			for i, body := range tc.bodies[1:] {
				if k, _ := proxy.SessionKey(h, []byte(body)); k != k0 {
					t.Errorf("SessionKey: request 1 %q, request %d %q; want one key", k0, i+2, k)
				}
			}
			fake := fakeupstream.New(fakeupstream.Options{})
			srv, base := startProxy(t, startUpstream(t, fake), nil)
			hdr := map[string]string{"X-Api-Key": "k", "Authorization": "Bearer k", "Anthropic-Version": "2023-06-01"}
			for i, body := range tc.bodies {
				drain(t, post(t, base+tc.path, body, hdr), fmt.Sprintf("request %d", i+1))
			}
			waitRequests(t, srv, len(tc.bodies))
			if got := sessionsOf(srv); len(got) != 1 || !strings.HasSuffix(got[0], fmt.Sprintf(":%d", len(tc.bodies))) {
				t.Errorf("sessions %v, want one of %d requests", got, len(tc.bodies))
			}
		})
	}
}

// Two conversations with the same first prompt in one directory, each
// under the session id its client sends (opencode's, Kilo's), are two
// sessions from their first requests on, interleaved as they come (issue
// 47.2): told apart by how they open, the second conversation's first
// request, which has no reply yet to tell it by, went to the first's
// session.
func TestClientSessionIDsTellConversationsApart(t *testing.T) {
	opening := func(step int, reply string) string {
		msgs := []string{`{"role":"user","content":"list the files"}`}
		if step > 0 {
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"`+reply+`"}]}`, `{"role":"user","content":"go on"}`)
		}
		if step > 1 {
			msgs = append(msgs, `{"role":"assistant","content":"done"}`, `{"role":"user","content":"thanks"}`)
		}
		return `{"model":"m","max_tokens":100,"system":"You are opencode.","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	for _, header := range []string{"X-Session-Affinity", "X-Session-Id", "X-Opencode-Session"} {
		t.Run(header, func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{})
			srv, base := startProxy(t, startUpstream(t, fake), nil)
			step := map[string]int{}
			order := []string{"a", "b", "a", "b", "a", "b"}
			for i, conv := range order {
				hdr := map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01", header: "ses_" + conv}
				drain(t, post(t, base+"/v1/messages", opening(step[conv], "I will run ls in "+conv), hdr), fmt.Sprintf("request %d", i+1))
				step[conv]++
			}
			waitRequests(t, srv, len(order))
			if got := sessionsOf(srv); len(got) != 2 || got[0] != "ses_a:3" || got[1] != "ses_b:3" {
				t.Errorf("sessions %v, want [ses_a:3 ses_b:3]", got)
			}
		})
	}
}

// Two conversations with the same first prompt (opencode run twice in one
// directory) are two sessions once their first replies differ (issue
// 47.2): the first request's session is carried over to the second, which
// brings the reply. Likewise under one client session id (issue 49.1).
func TestSamePromptTwoConversationsTwoSessions(t *testing.T) {
	opening := func(reply string, more ...string) string {
		msgs := []string{`{"role":"user","content":"list the files"}`}
		if reply != "" {
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"`+reply+`"}]}`, `{"role":"user","content":"go on"}`)
		}
		msgs = append(msgs, more...)
		return `{"model":"m","max_tokens":100,"system":"You are opencode.","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	later := []string{`{"role":"assistant","content":"done"}`, `{"role":"user","content":"thanks"}`}
	for _, tc := range []struct {
		name   string
		header map[string]string
		order  []string // the conversation ("a" or "b") of each request, in order
	}{
		{"fallback key, one after the other", nil, []string{"a", "a", "a", "b", "b", "b"}},
		{"fallback key, interleaved after the first replies", nil, []string{"a", "a", "b", "b", "a", "b"}},
		{"one client session id", map[string]string{proxy.HeaderSession: "dir-session"}, []string{"a", "a", "b", "b", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{})
			srv, base := startProxy(t, startUpstream(t, fake), nil)
			hdr := map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01"}
			for k, v := range tc.header {
				hdr[k] = v
			}
			step := map[string]int{}
			for i, conv := range tc.order {
				reply := "I will run ls in " + conv
				body := opening("")
				switch step[conv] {
				case 1:
					body = opening(reply)
				case 2:
					body = opening(reply, later...)
				}
				step[conv]++
				drain(t, post(t, base+"/v1/messages", body, hdr), fmt.Sprintf("request %d", i+1))
			}
			waitRequests(t, srv, len(tc.order))
			if got := sessionsOf(srv); len(got) != 2 || !strings.HasSuffix(got[0], ":3") || !strings.HasSuffix(got[1], ":3") {
				t.Errorf("sessions %v, want two of 3 requests each", got)
			}
		})
	}
}

// With Options.Tenants, conversations are told apart within a tenant: two
// tenants' conversations under one session id each keep the id (their
// tenant names the session), and a second conversation of one tenant gets
// a session of its own.
func TestTenantsConversationsApart(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	us := startUpstream(t, fake)
	srv, err := proxy.New(proxy.Options{AnthropicURL: us, Tenants: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	body := func(prompt string) string {
		return `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	}
	for _, r := range []struct{ key, prompt string }{{"key-a", "one"}, {"key-b", "two"}, {"key-a", "three"}} {
		drain(t, post(t, ps.URL+"/v1/messages", body(r.prompt), map[string]string{"X-Api-Key": r.key, "Anthropic-Version": "2023-06-01", proxy.HeaderSession: "s"}), r.key)
	}
	waitRequests(t, srv, 3)
	ta, _ := proxy.Tenant(http.Header{"X-Api-Key": {"key-a"}})
	tb, _ := proxy.Tenant(http.Header{"X-Api-Key": {"key-b"}})
	got := map[string]bool{}
	for _, st := range srv.Stats() {
		got[st.Session] = true
	}
	if len(got) != 3 || !got["t-"+ta+"-s"] || !got["t-"+tb+"-s"] {
		t.Errorf("sessions %v, want t-%s-s, t-%s-s and one more of tenant %s", got, ta, tb, ta)
	}
}
