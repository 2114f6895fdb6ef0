package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
)

// agentLoop drives the proxy the way Claude Code does: extended thinking
// on, every assistant turn sent back as the API returned it, a tool result
// appended after each tool call, and the client's own breakpoint on the
// last message only (it moves every request). Result i of the loop is
// result(i). It returns the proxy's statistics of the session and the
// upstream's count of cache breaks (requests whose messages, compared
// without cache_control, do not start with the previous request's).
func agentLoop(t *testing.T, engine proxy.Engine, turns int, result func(i int) string) (proxy.SessionStats, int) {
	t.Helper()
	var mu sync.Mutex
	step := 0 // the model's own count: a compaction hides earlier turns
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		mu.Lock()
		defer mu.Unlock()
		if step < turns {
			step++
			return fakeupstream.Reply{Thinking: fmt.Sprintf("step %d", step), Text: "running",
				ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": fmt.Sprintf("step %d", step)}}}}
		}
		return fakeupstream.Reply{Thinking: "done", Text: "FINAL"}
	}})
	us := httptest.NewServer(fake)
	t.Cleanup(us.Close)
	srv, err := proxy.New(proxy.Options{Engine: engine, AnthropicURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)

	history := []string{`{"role":"user","content":[{"type":"text","text":"run the steps"}]}`}
	send := func() []map[string]any {
		msgs := append([]string(nil), history...)
		last := msgs[len(msgs)-1]
		msgs[len(msgs)-1] = strings.Replace(last, `}]}`, `,"cache_control":{"type":"ephemeral"}}]}`, 1)
		b := `{"model":"m","max_tokens":100,"thinking":{"type":"adaptive"},"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
		resp := post(t, ps.URL+"/v1/messages", b, map[string]string{"X-Claude-Code-Session-Id": "s1"})
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", len(history)/2, resp.StatusCode, data)
		}
		var m struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		content, _ := json.Marshal(m.Content)
		history = append(history, `{"role":"assistant","content":`+string(content)+`}`)
		return m.Content
	}
	for i := 0; ; i++ {
		blocks := send()
		id, _ := blocks[len(blocks)-1]["id"].(string)
		if id == "" {
			break
		}
		out, _ := json.Marshal(result(i))
		history = append(history, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":`+string(out)+`}]}`)
	}
	breaks := 0
	var prev []string
	for _, r := range fake.Records() {
		if r.API == "" {
			continue
		}
		if r.Rejected != "" {
			t.Errorf("the upstream rejected a request: %s", r.Rejected)
		}
		msgs := wireMessages(t, r.Body)
		if !hasPrefix(msgs, prev) {
			breaks++
		}
		prev = msgs
	}
	stats := srv.Stats()
	if len(stats) != 1 {
		t.Fatalf("%d sessions, want 1", len(stats))
	}
	return stats[0], breaks
}

// bigOrSmall alternates outputs the workspace offloads at once (never sent
// whole, so offloading them costs no cache) with small ones it keeps.
func bigOrSmall(i int) string {
	if i%2 == 0 {
		return strings.Repeat(fmt.Sprintf("output line of step %d\n", i), 200)
	}
	return fmt.Sprintf("small output %d", i)
}

// A session whose engine never changes what it sent: the proxy edits every
// request (offloads, its own breakpoint) yet never changes an earlier
// message, and every thinking block stays valid.
func TestStableSessionNeverBreaksTheCache(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{
		Workspace: workspace.Options{InlineLimit: 1000},
		NoPrune:   true,
	}})
	st, breaks := agentLoop(t, e, 40, bigOrSmall)
	if st.Requests != 41 || st.Edited == 0 {
		t.Fatalf("requests %d, edited %d; want 41 requests, edits", st.Requests, st.Edited)
	}
	if breaks != 0 || st.CacheBreaks != 0 || st.PrefixChanges != 0 || st.DropBlock != 0 {
		t.Errorf("upstream breaks %d; stats: cache breaks %d, prefix changes %d, drop_block %d; want all 0",
			breaks, st.CacheBreaks, st.PrefixChanges, st.DropBlock)
	}
}

// With prune batches and a compaction, the cache breaks only on the
// requests where the engine changed the prefix: removing the thinking of
// turns whose prefix changed never sets off a break of its own on the next
// request (each removal would invalidate the next turn's thinking).
func TestCacheBreaksOnlyWhereTheEngineChangesThePrefix(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute)
		return now
	}
	e := pipelineEngine(t, proxy.PipelineOptions{Now: clock, Pipeline: pipeline.Options{
		Workspace:    workspace.Options{InlineLimit: 4000},
		Prune:        prune.Options{MaxAge: time.Minute, KeepRecent: 1, ToolNames: []string{"bash"}},
		ClearAtLeast: 2000,
		Clearing:     pipeline.ClearBatched,                         // batches, then a compaction
		Compact:      compact.Options{Limit: 5_000, MaxRetries: -1}, // real token counts from the billing fake
	}})
	middling := func(i int) string { return strings.Repeat(fmt.Sprintf("middling output of step %d\n", i), 140) }
	st, breaks := agentLoop(t, e, 40, middling)
	if st.PrefixChanges == 0 || st.Compactions == 0 {
		t.Fatalf("prefix changes %d, compactions %d: the test wants prune batches and a compaction", st.PrefixChanges, st.Compactions)
	}
	if breaks != st.CacheBreaks || st.CacheBreaks > st.PrefixChanges {
		t.Errorf("upstream breaks %d, counted %d; engine prefix changes %d (compactions %d): want breaks = count <= prefix changes",
			breaks, st.CacheBreaks, st.PrefixChanges, st.Compactions)
	}
	t.Logf("requests %d, prefix changes %d, compactions %d, cache breaks %d, drop_block %d", st.Requests, st.PrefixChanges, st.Compactions, st.CacheBreaks, st.DropBlock)
}
