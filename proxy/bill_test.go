package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

func near(a, b float64) bool { return math.Abs(a-b) < 2e-6 }

// Three requests of one Claude Code session and one chat request of
// another, against an upstream that reports fixed usages; every figure
// below is computed by hand from the list prices (USD per million tokens):
// claude-sonnet-4-5 and the Anthropic fallback (claude-sonnet-4) $3 in,
// $0.30 read, $3.75 write (5m), $6 write (1h), $15 out; gpt-5 $1.25 in,
// $0.125 cached, $10 out.
func TestStatsBillHandComputed(t *testing.T) {
	usages := map[string]string{
		// 100×3 + 1500×3.75 + 500×6 + 50×15 = 9675 → $0.009675
		"one": `{"input_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":2000,"cache_creation":{"ephemeral_5m_input_tokens":1500,"ephemeral_1h_input_tokens":500},"output_tokens":50}`,
		// 10×3 + 2000×0.3 + 300×3.75 + 20×15 = 2055 → $0.002055 (streamed)
		"two": `{"input_tokens":10,"cache_read_input_tokens":2000,"cache_creation_input_tokens":300,"output_tokens":20}`,
		// an unknown model at the fallback: 1000×3 + 100×15 = 4500 → $0.0045
		"three": `{"input_tokens":1000,"output_tokens":100}`,
	}
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			// (2000−1024)×1.25 + 1024×0.125 + 100×10 = 2348 → $0.002348
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":2000,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens":100}}`)
			return
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			Stream bool `json:"stream"`
		}
		json.Unmarshal(body, &req)
		u := usages[req.Messages[len(req.Messages)-1].Content]
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":2000,\"cache_creation_input_tokens\":300,\"output_tokens\":1}}}\n\n")
			fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":%s}\n\n", u)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"content":[{"type":"text","text":"ok"}],"usage":%s}`, u)
	})
	var logs bytes.Buffer
	var mu sync.Mutex
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, OpenAIURL: us.URL, Logger: newLockedLogger(&logs, &mu)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	cc := map[string]string{"X-Claude-Code-Session-Id": "cc"}
	for _, r := range []struct{ model, last, stream string }{
		{"claude-sonnet-4-5-20250929", "one", "false"}, {"claude-sonnet-4-5", "two", "true"}, {"mystery-model", "three", "false"},
	} {
		resp := post(t, ps.URL+"/v1/messages", `{"model":"`+r.model+`","max_tokens":10,"stream":`+r.stream+`,"messages":[{"role":"user","content":"start"},{"role":"assistant","content":"ready"},{"role":"user","content":"`+r.last+`"}]}`, cc) // one conversation
		io.Copy(io.Discard, resp.Body)
	}
	resp := post(t, ps.URL+"/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"q"}]}`,
		map[string]string{"Authorization": "Bearer k", proxy.HeaderSession: "chat"})
	io.Copy(io.Discard, resp.Body)

	get, err := http.Get(ps.URL + proxy.StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	var stats struct {
		Sessions []map[string]any `json:"sessions"`
		Total    map[string]any   `json:"total"`
	}
	if err := json.NewDecoder(get.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	bySession := map[string]map[string]any{}
	for _, s := range stats.Sessions {
		bySession[s["session"].(string)] = s
	}
	want := map[string]map[string]float64{
		"cc": {"cost_usd": 0.01623, "cost_without_usd": 0.01623, "saved_usd": 0, "summary_requests": 0, "summary_cost_usd": 0,
			"input_tokens": 1110, "cache_read_tokens": 2000, "cache_write_tokens": 2300, "output_tokens": 170},
		"chat": {"cost_usd": 0.002348, "cost_without_usd": 0.002348, "saved_usd": 0,
			"input_tokens": 976, "cache_read_tokens": 1024, "cache_write_tokens": 0, "output_tokens": 100},
	}
	want["total"] = map[string]float64{"requests": 4, "cost_usd": 0.018578, "cost_without_usd": 0.018578, "saved_usd": 0,
		"input_tokens": 2086, "cache_read_tokens": 3024, "cache_write_tokens": 2300, "output_tokens": 270}
	bySession["total"] = stats.Total
	for name, keys := range want {
		got := bySession[name]
		for k, v := range keys {
			g, ok := got[k].(float64)
			if !ok || !near(g, v) {
				t.Errorf("%s: %s = %v, want %v", name, k, got[k], v)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "cost_usd=0.009675 cost_without_usd=0.009675") {
		t.Errorf("no cost on the request's log line:\n%s", logs.String())
	}
}

// summaryEngine asks the upstream for a summary while preparing every
// request, as a compaction does, with the request's context.
type summaryEngine struct {
	summarizers func(req *proxy.Request) compact.Summarizer
}

func (e summaryEngine) Prepare(ctx context.Context, req *proxy.Request) (*proxy.Prepared, error) {
	if _, err := e.summarizers(req).Summarize(ctx, compact.Request{Messages: req.Document.Messages}); err != nil {
		return nil, err
	}
	return &proxy.Prepared{Messages: req.Document.Messages, Unchanged: true}, nil
}

func (summaryEngine) Observe(context.Context, string, pricing.Usage, int) {}

// The summary requests the proxy sends itself are billed to the session,
// counted apart and left out of the bill without agentctx.
func TestSummaryRequestsBilled(t *testing.T) {
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get(proxy.HeaderSummary) != "" {
			// 5000×3 + 800×15 = 27000 → $0.027
			io.WriteString(w, `{"content":[{"type":"text","text":"the summary"}],"usage":{"input_tokens":5000,"output_tokens":800}}`)
			return
		}
		// 1000×3 + 10×15 = 3150 → $0.00315
		io.WriteString(w, `{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1000,"output_tokens":10}}`)
	})
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	eng := summaryEngine{proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: us.URL})}
	srv, err := proxy.New(proxy.Options{Engine: eng, AnthropicURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	for range 2 {
		resp := post(t, ps.URL+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"X-Claude-Code-Session-Id": "s", "X-Api-Key": "k"})
		io.Copy(io.Discard, resp.Body)
	}
	st := srv.Stats()[0]
	if st.SummaryRequests != 2 || !near(st.SummaryCostUSD, 0.054) || !near(st.CostUSD, 0.0603) || !near(st.CostWithoutUSD, 0.0063) ||
		!near(st.SavedUSD, -0.054) || st.InputTokens != 12000 || st.OutputTokens != 1620 {
		t.Errorf("bill %+v; want 2 summary requests at $0.054, cost $0.0603, without $0.0063, 12000 in, 1620 out", st.Bill)
	}
	if tot := srv.Total(); tot.SummaryRequests != 2 || !near(tot.CostUSD, 0.0603) {
		t.Errorf("total %+v", tot)
	}
}

// billLoop runs a Claude Code-like session (see agentLoop) through a proxy
// over engine (nil: no proxy, straight to the fake) and returns the
// proxy's statistics of the session and the fake's bill.
func billLoop(t *testing.T, engine proxy.Engine, turns int, result func(i int) string) (proxy.SessionStats, fakeupstream.Bill) {
	t.Helper()
	step := 0
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if step < turns {
			step++
			return fakeupstream.Reply{Thinking: fmt.Sprintf("step %d", step), Text: "running",
				ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": fmt.Sprintf("step %d", step)}}}}
		}
		return fakeupstream.Reply{Thinking: "done", Text: "FINAL"}
	}})
	us := httptest.NewServer(fake)
	t.Cleanup(us.Close)
	url := us.URL
	var srv *proxy.Server
	if engine != nil {
		var err error
		if srv, err = proxy.New(proxy.Options{Engine: engine, AnthropicURL: us.URL, Logger: testLogger(t)}); err != nil {
			t.Fatal(err)
		}
		ps := httptest.NewServer(srv)
		t.Cleanup(ps.Close)
		url = ps.URL
	}
	system := `[{"type":"text","text":` + fmt.Sprintf("%q", strings.Repeat("You are a careful coding agent. ", 200)) + `,"cache_control":{"type":"ephemeral"}}]`
	history := []string{`{"role":"user","content":[{"type":"text","text":"run the steps"}]}`}
	for i := 0; ; i++ {
		msgs := append([]string(nil), history...)
		last := msgs[len(msgs)-1]
		msgs[len(msgs)-1] = strings.Replace(last, `}]}`, `,"cache_control":{"type":"ephemeral"}}]}`, 1)
		b := `{"model":"claude-sonnet-4-5","max_tokens":100,"thinking":{"type":"adaptive"},"system":` + system + `,` +
			`"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
		resp := post(t, url+"/v1/messages", b, map[string]string{"X-Claude-Code-Session-Id": "s1", "X-Api-Key": "k"})
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i+1, resp.StatusCode, data)
		}
		var m struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		content, _ := json.Marshal(m.Content)
		history = append(history, `{"role":"assistant","content":`+string(content)+`}`)
		id, _ := m.Content[len(m.Content)-1]["id"].(string)
		if id == "" {
			break
		}
		out, _ := json.Marshal(result(i))
		history = append(history, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":`+string(out)+`}]}`)
	}
	if srv == nil {
		return proxy.SessionStats{}, fake.Bill()
	}
	return srv.Stats()[0], fake.Bill()
}

// The bill so far is the upstream's; a session the engine does not edit
// costs the same without agentctx.
func TestBillWithoutOfAnUneditedSessionIsTheBill(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{
		Workspace: workspace.Options{InlineLimit: 1 << 20}, NoPrune: true, NoCompact: true,
	}})
	st, bill := billLoop(t, e, 12, bigOrSmall)
	if st.Edited != 0 {
		t.Fatalf("%d requests edited, want none", st.Edited)
	}
	if st.CostUSD <= 0 || !near(st.CostUSD, bill.USD) {
		t.Errorf("cost $%v, the upstream billed $%v", st.CostUSD, bill.USD)
	}
	if !near(st.CostWithoutUSD, st.CostUSD) || st.SavedUSD != 0 {
		t.Errorf("cost $%v, without $%v, saved $%v: want the same bill", st.CostUSD, st.CostWithoutUSD, st.SavedUSD)
	}
	if st.CacheReadTokens != bill.CacheRead || st.CacheWriteTokens != bill.CacheWrite+bill.CacheWrite1h || st.InputTokens != bill.Input || st.OutputTokens != bill.Output {
		t.Errorf("tokens %+v, upstream %+v", st.Bill, bill.Totals)
	}
}

// Offloading large results makes the session cheaper: the estimate without
// agentctx is above the bill, and near what the same session costs sent
// straight to the upstream.
func TestBillWithoutOfAnEditedSession(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{
		Workspace: workspace.Options{InlineLimit: 1000}, NoPrune: true, NoCompact: true,
	}})
	st, bill := billLoop(t, e, 12, bigOrSmall)
	if st.Edited == 0 {
		t.Fatal("nothing edited")
	}
	if !near(st.CostUSD, bill.USD) {
		t.Errorf("cost $%v, the upstream billed $%v", st.CostUSD, bill.USD)
	}
	if st.SavedUSD <= 0 || !near(st.SavedUSD, st.CostWithoutUSD-st.CostUSD) {
		t.Errorf("cost $%v, without $%v, saved $%v: want a saving", st.CostUSD, st.CostWithoutUSD, st.SavedUSD)
	}
	_, direct := billLoop(t, nil, 12, bigOrSmall)
	if diff := math.Abs(st.CostWithoutUSD-direct.USD) / direct.USD; diff > 0.05 {
		t.Errorf("estimate without agentctx $%v, the session sent direct cost $%v (%.1f%% off)", st.CostWithoutUSD, direct.USD, 100*diff)
	}
	t.Logf("with $%.6f, without (estimate) $%.6f, direct $%.6f", st.CostUSD, st.CostWithoutUSD, direct.USD)
}

// countingEngine is a PipelineEngine that counts the messages the proxy
// asks it to count.
type countingEngine struct {
	*proxy.PipelineEngine
	calls atomic.Int64
}

func (e *countingEngine) CountMessage(m agentctx.Message) int {
	e.calls.Add(1)
	return e.PipelineEngine.CountMessage(m)
}

// The estimate of the bill without agentctx takes the counts the Engine
// made of the request's messages (Request.Facts) instead of counting every
// new message a second time; the bill is the same.
func TestBillUsesTheEnginesCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inline int
	}{{"unedited", 1 << 20}, {"edited", 1000}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := proxy.PipelineOptions{Pipeline: pipeline.Options{
				Workspace: workspace.Options{InlineLimit: tc.inline}, NoPrune: true, NoCompact: true,
			}}
			e := &countingEngine{PipelineEngine: pipelineEngine(t, opts)}
			st, bill := billLoop(t, e, 12, bigOrSmall)
			if st.Requests != 13 {
				t.Fatalf("%d requests", st.Requests)
			}
			// The sent list of an edited request holds messages the
			// request did not (a reference in place of a result): those
			// only are counted.
			if n := e.calls.Load(); n > int64(st.Edited) {
				t.Errorf("the proxy counted %d messages again (%d requests edited)", n, st.Edited)
			}
			if !near(st.CostUSD, bill.USD) {
				t.Errorf("cost $%v, the upstream billed $%v", st.CostUSD, bill.USD)
			}
			plain, _ := billLoop(t, pipelineEngine(t, opts), 12, bigOrSmall)
			if !near(st.CostWithoutUSD, plain.CostWithoutUSD) {
				t.Errorf("estimate without agentctx $%v, with the engine's own counts $%v", st.CostWithoutUSD, plain.CostWithoutUSD)
			}
		})
	}
}
