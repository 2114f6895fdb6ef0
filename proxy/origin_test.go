package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// storingProxy is a proxy whose pipeline stores every tool result in a
// memory store, in front of up; it returns the proxy's URL, the store, and
// the count of requests up received.
func storingProxy(t *testing.T, up http.HandlerFunc) (string, workspace.Store, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		up(w, r)
	}))
	t.Cleanup(us.Close)
	store := memstore.New()
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{Store: store, Sessions: memsession.New(), NoCompact: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: us.URL, OpenAIURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	return ps.URL, store, &hits
}

// toolBody is a request of api whose history holds n tool results of
// 45,000 characters each (every one of them stored and offloaded: over
// the default inline limit),
// their call ids starting with id.
func toolBody(api, id string, n int) string {
	var msgs []string
	msgs = append(msgs, `{"role":"user","content":"look at the logs"}`)
	for i := range n {
		out := strings.Repeat(fmt.Sprintf("log line %d of %s\n", i, id), 45000/20)
		q, _ := json.Marshal(out)
		call := fmt.Sprintf("%s_%d", id, i)
		if api == "chat" {
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"cat log\"}"}}]}`, call),
				fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%s}`, call, q))
			continue
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"bash","input":{"cmd":"cat log"}}]}`, call),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s}]}`, call, q))
	}
	msgs = append(msgs, `{"role":"user","content":"and now?"}`)
	return `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[` + strings.Join(msgs, ",") + `]}`
}

func countArtifacts(t *testing.T, store workspace.Store) int {
	t.Helper()
	n := 0
	nss, err := store.Namespaces(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		list, err := store.Query(t.Context(), ns, workspace.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		n += len(list)
	}
	return n
}

// What a web page can make a browser send is refused before any work
// (issue 49.4: cross-origin text/plain POSTs to /v1/messages were
// prepared, their results stored, then forwarded): an Origin other than
// the proxy's own loopback origin, or a model request of a type a page
// sends without a CORS preflight. 403, one line of JSON in the API's
// error shape; nothing forwarded, nothing stored. A client's request (no
// Origin, JSON) and one from the proxy's own loopback origin go through.
func TestBrowserRequestsRefused(t *testing.T) {
	base, store, hits := storingProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":1}}`)
	})
	host := strings.TrimPrefix(base, "http://")
	for i, c := range []struct {
		name, path, ctype, origin, host string
		refused                         bool
	}{
		{"cross-origin text/plain", "/v1/messages", "text/plain;charset=UTF-8", "https://evil.example", "", true},
		{"cross-origin JSON", "/v1/messages", "application/json", "https://evil.example", "", true},
		{"sandboxed page", "/v1/messages", "application/json", "null", "", true},
		{"DNS rebinding, same origin", "/v1/messages", "application/json", "http://rebind.example:8787", "rebind.example:8787", true},
		{"another loopback origin", "/v1/messages", "application/json", "http://localhost:3000", "", true},
		{"text/plain without Origin", "/v1/messages", "text/plain", "", "", true},
		{"form", "/v1/messages", "application/x-www-form-urlencoded", "", "", true},
		{"multipart form", "/v1/messages", "multipart/form-data; boundary=x", "", "", true},
		{"chat, cross-origin", "/v1/chat/completions", "application/json", "https://evil.example", "", true},
		{"chat, text/plain", "/v1/chat/completions", "text/plain", "", "", true},
		{"responses, text/plain", "/v1/responses", "text/plain", "", "", true},
		{"mcp, cross-origin", "/mcp", "application/json", "https://evil.example", "", true},
		{"a client", "/v1/messages", "application/json", "", "", false},
		{"the proxy's own origin", "/v1/messages", "application/json", "http://" + host, "", false},
	} {
		body := toolBody("anthropic", fmt.Sprintf("toolu_%d", i), 3)
		if strings.Contains(c.path, "chat") {
			body = toolBody("chat", fmt.Sprintf("call_%d", i), 3)
		}
		before, stored := hits.Load(), countArtifacts(t, store)
		req, _ := http.NewRequest(http.MethodPost, base+c.path, strings.NewReader(body))
		req.Header.Set("Content-Type", c.ctype)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		forwarded, newArtifacts := hits.Load()-before, countArtifacts(t, store)-stored
		if !c.refused {
			if resp.StatusCode != 200 || forwarded != 1 || newArtifacts == 0 {
				t.Errorf("%s: %d, forwarded %d, %d artifacts stored; want 200, forwarded, stored: %s", c.name, resp.StatusCode, forwarded, newArtifacts, got)
			}
			continue
		}
		if resp.StatusCode != http.StatusForbidden || forwarded != 0 || newArtifacts != 0 {
			t.Errorf("%s: %d, forwarded %d, %d artifacts stored; want 403, nothing forwarded or stored: %s", c.name, resp.StatusCode, forwarded, newArtifacts, got)
			continue
		}
		var shape struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal(got, &shape); err != nil || strings.Count(strings.TrimSpace(string(got)), "\n") != 0 || shape.Error.Message == "" {
			t.Errorf("%s: not one line of JSON with an error message: %q", c.name, got)
		}
		if openai := strings.Contains(c.path, "chat") || strings.Contains(c.path, "responses"); openai != (shape.Type == "") {
			t.Errorf("%s: error in the wrong API's shape: %s", c.name, got)
		}
	}
}
