package proxy_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
)

// TestReplicasAgreeOnThinking: two proxies over one session store and one
// workspace (replicas behind a load balancer) serve alternate requests of a
// Claude Code-like session with signed thinking, and send upstream what one
// proxy sends. The answer to an edited request (a large tool result
// offloaded) has thinking produced after the edited prefix; the next
// request, served by the other replica, must know it (the session state
// holds it): else it takes the block for invalid (its client's history
// before it differs from what was sent) and strips it from the ended turn.
// The strict fake upstream checks every prefix.
func TestReplicasAgreeOnThinking(t *testing.T) {
	// The same directory for both runs: the references name it, and the
	// signatures cover them.
	dir := filepath.Join(t.TempDir(), "run")
	single := runReplicas(t, dir, 1)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	two := runReplicas(t, dir, 2)
	for i := range single {
		if single[i] != two[i] {
			t.Errorf("request %d: two replicas sent\n%s\none proxy sent\n%s", i+1, two[i], single[i])
		}
	}
	if !strings.Contains(single[2], `"thinking":"answered"`) {
		t.Errorf("one proxy: the ended turn's valid thinking was not sent:\n%s", single[2])
	}
}

// runReplicas runs the session through n proxies in turn and returns the
// bodies sent upstream. Its proxies are closed when it returns.
func runReplicas(t *testing.T, dir string, n int) []string {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if len(c.Results) == 0 {
			return fakeupstream.Reply{Thinking: "call a tool", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "ls"}}}}
		}
		return fakeupstream.Reply{Thinking: "answered", Text: "the answer"}
	}})
	up := httptest.NewServer(fake)
	defer up.Close()
	sessions := memsession.New()
	var urls []string
	for range n {
		e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{
			WorkspaceDir: filepath.Join(dir, "ws"),
			Sessions:     sessions,
			Workspace:    workspace.Options{InlineLimit: 1000},
			NoCompact:    true,
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: up.URL, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		ps := httptest.NewServer(srv)
		defer ps.Close()
		urls = append(urls, ps.URL)
	}
	hdr := map[string]string{proxy.HeaderSession: "replicas"}
	var msgs []string
	var sent []string
	turn := func(i int, add ...string) json.RawMessage {
		msgs = append(msgs, add...)
		resp := post(t, urls[i%n]+"/v1/messages", body(msgs...), hdr)
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("replicas %d, request %d: status %d: %s", n, i+1, resp.StatusCode, data)
		}
		recs := fake.Records()
		last := recs[len(recs)-1]
		if last.Rejected != "" {
			t.Fatalf("replicas %d, request %d: rejected: %s", n, i+1, last.Rejected)
		}
		sent = append(sent, string(last.Body))
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return json.RawMessage(`{"role":"assistant","content":` + string(m.Content) + `}`)
	}
	a1 := turn(0, `{"role":"user","content":"please call a tool"}`)
	var call struct {
		Content []map[string]any `json:"content"`
	}
	json.Unmarshal(a1, &call)
	id, _ := call.Content[len(call.Content)-1]["id"].(string)
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + strings.Repeat("file.go ", 1000) + `"}]}`
	a2 := turn(1, string(a1), result)
	turn(2, string(a2), `{"role":"user","content":"and now?"}`)
	return sent
}
