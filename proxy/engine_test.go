package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

func pipelineEngine(t *testing.T, o proxy.PipelineOptions) *proxy.PipelineEngine {
	t.Helper()
	if o.Pipeline.WorkspaceDir == "" {
		o.Pipeline.WorkspaceDir = filepath.Join(t.TempDir(), "ws")
	}
	o.Pipeline.Compact.Dir = filepath.Join(t.TempDir(), "archive")
	e, err := proxy.NewPipelineEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func toolTurns(n, size int) string {
	msgs := []string{`{"role":"user","content":"go"}`}
	for i := 0; i < n; i++ {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"ls"}}]}`, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}`, i, strings.Repeat(fmt.Sprintf("line %d\n", i), size/7)))
	}
	return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestPipelineEngineSessionsAreBoundedAndStampsNeverSent(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{MaxSessions: 2, Pipeline: pipeline.Options{Workspace: workspace.Options{InlineLimit: 1000}}})
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, e)
	for i := 0; i < 3; i++ {
		resp := post(t, base+"/v1/messages", toolTurns(3, 2000), map[string]string{proxy.HeaderSession: fmt.Sprint("s", i)})
		io.ReadAll(resp.Body)
	}
	if n := e.Sessions(); n != 2 {
		t.Errorf("%d sessions kept, want 2", n)
	}
	for _, r := range fake.Records() {
		if strings.Contains(string(r.Body), `"timestamp"`) {
			t.Fatalf("a first-seen timestamp reached the upstream:\n%.300s", r.Body)
		}
		if !strings.Contains(string(r.Body), "knowledge_list") || !strings.Contains(string(r.Body), "<file>/") {
			t.Errorf("want references naming the artifact file:\n%.600s", r.Body)
		}
	}
}

// The upstream summarizer asks the same upstream once, with the client's
// credentials and model; a failure falls back to the extractive summary.
func TestUpstreamSummarizer(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var summaries atomic.Int32
		var gotKey, gotModel atomic.Value
		fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
			if c.Header.Get(proxy.HeaderSummary) != "" {
				summaries.Add(1)
				gotKey.Store(c.Header.Get("X-Api-Key"))
				gotModel.Store(c.Model)
				if fail {
					return fakeupstream.Reply{Text: ""} // an empty answer is a failure
				}
				return fakeupstream.Reply{Text: "## Goals and key decisions\n- MODEL SUMMARY"}
			}
			return fakeupstream.Reply{Text: "ok"}
		}})
		us := httptest.NewServer(fake)
		defer us.Close()
		e := pipelineEngine(t, proxy.PipelineOptions{
			Pipeline:   pipeline.Options{NoPrune: true, Compact: compact.Options{Limit: 3000, MaxRetries: -1}, Workspace: workspace.Options{InlineLimit: 100000}},
			Summarizer: proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: us.URL}),
		})
		srv, _ := proxy.New(proxy.Options{Engine: e, AnthropicURL: us.URL, Logger: testLogger(t)})
		ps := httptest.NewServer(srv)
		defer ps.Close()
		resp := post(t, ps.URL+"/v1/messages", strings.Replace(toolTurns(8, 1500), `"model":"m"`, `"model":"claude-client-model"`, 1),
			map[string]string{"X-Api-Key": "client-key", "Anthropic-Version": "2023-06-01"})
		io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if summaries.Load() != 1 || gotKey.Load() != "client-key" || gotModel.Load() != "claude-client-model" {
			t.Errorf("fail=%v: %d summary requests, key %v, model %v; want one with the client's key and model", fail, summaries.Load(), gotKey.Load(), gotModel.Load())
		}
		last := string(fake.Records()[len(fake.Records())-1].Body)
		switch {
		case !strings.Contains(last, compact.SummaryTitle):
			t.Errorf("fail=%v: no summary sent", fail)
		case !fail && !strings.Contains(last, "MODEL SUMMARY"):
			t.Errorf("the model's summary was not used")
		case fail && strings.Contains(last, "MODEL SUMMARY"):
			t.Errorf("fallback expected")
		}
	}
}

func TestConcurrentSessions(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{Workspace: workspace.Options{InlineLimit: 1000}}})
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, e)
	var wg sync.WaitGroup
	errs := make(chan error, 50*3)
	for s := 0; s < 50; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 1; turn <= 3; turn++ {
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(toolTurns(turn, 1500)))
				req.Header.Set(proxy.HeaderSession, fmt.Sprint("session-", s))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("session %d turn %d: status %d", s, turn, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.Sessions(); n != 50 {
		t.Errorf("%d sessions, want 50", n)
	}
}

// Serve lets a stream in flight finish after its context is done.
func TestGracefulShutdownFinishesStreams(t *testing.T) {
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		close(started)
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "event: message_stop\ndata: {}\n\n")
	}))
	defer up.Close()
	srv, _ := proxy.New(proxy.Options{AnthropicURL: up.URL})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	body := make(chan string, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/messages", "application/json", strings.NewReader(`{"messages":[]}`))
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		body <- string(b)
	}()
	<-started
	cancel()
	if got := <-body; !strings.Contains(got, "message_stop") {
		t.Errorf("the stream was cut at shutdown: %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// An OpenAI chat agent loop through the pipeline engine: every request the
// strict fake sees is paired, and large results are offloaded.
func TestChatLoopThroughPipeline(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{Workspace: workspace.Options{InlineLimit: 2000},
		Compact: compact.Options{Limit: 1000}}, Logger: testLogger(t)})
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if c.Turn < 6 {
			return fakeupstream.Reply{Text: "step", ToolCalls: []fakeupstream.ToolCall{{Name: "sh", Input: map[string]any{"cmd": "ls"}}}}
		}
		return fakeupstream.Reply{Text: "done"}
	}})
	base := newProxy(t, fake, e)
	msgs := []map[string]any{{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}}
	for turn := 0; turn < 7; turn++ {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "stream": false})
		resp := post(t, base+"/v1/chat/completions", string(body), map[string]string{proxy.HeaderSession: "chat"})
		var out struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Unmarshal(data, &out) != nil || len(out.Choices) == 0 {
			t.Fatalf("turn %d: %d %s", turn, resp.StatusCode, data)
		}
		m := out.Choices[0].Message
		msgs = append(msgs, m)
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			break
		}
		for _, c := range calls {
			id := c.(map[string]any)["id"]
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat("output line\n", 400)})
		}
	}
	var offloaded, summarized bool
	for _, r := range fake.Records() {
		if r.Rejected != "" {
			t.Errorf("rejected: %s", r.Rejected)
		}
		offloaded = offloaded || strings.Contains(string(r.Body), "knowledge_list")
		summarized = summarized || strings.Contains(string(r.Body), compact.SummaryTitle)
	}
	if !offloaded || !summarized {
		t.Errorf("offloaded %v, summarized %v; want both", offloaded, summarized)
	}
}
