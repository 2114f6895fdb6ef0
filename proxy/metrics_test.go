package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

// scripted is a proxy that has served a scripted agent session against
// the fake upstream: turns calls of a shell tool with large outputs, under
// an engine that offloads, clears and compacts within them.
type scripted struct {
	srv  *proxy.Server
	url  string // the proxy's
	fake *fakeupstream.Server
}

// scriptedSession runs a session of turns tool calls through a proxy
// built with opts (its Engine and upstream URLs are set here).
func scriptedSession(t *testing.T, turns int, opts proxy.Options) scripted {
	t.Helper()
	step := 0
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if step < turns {
			step++
			return fakeupstream.Reply{Text: "running",
				ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": fmt.Sprintf("step %d", step)}}}}
		}
		return fakeupstream.Reply{Text: "FINAL"}
	}})
	up := startUpstream(t, fake)
	store := memstore.New()
	dir := t.TempDir()
	// A clock that moves on a second at every reading: every result but the
	// newest is past the prune age at the next request however fast the
	// machine runs the script (with the wall clock, a request that came
	// within a millisecond of the one before cleared nothing).
	var mu sync.Mutex
	clock := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	engine, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
		Pipeline: pipeline.Options{
			Now:          now,
			Store:        store,
			Workspace:    workspace.Options{InlineLimit: 8000},
			Prune:        prune.Options{MaxAge: time.Millisecond, KeepRecent: 1, ToolNames: []string{"Bash"}},
			ClearAtLeast: 500,
			Clearing:     pipeline.ClearBatched,
			Compact:      compact.Options{Limit: 2_500, Dir: filepath.Join(dir, "archive"), MaxRetries: -1},
		},
		Summarizer: proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: up, OpenAIURL: up}),
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	opts.Engine = engine
	opts.ReadBack = mcpserver.New(store, mcpserver.Options{}).Call
	opts.AnthropicURL, opts.OpenAIURL = up, up
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	srv, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	system := `[{"type":"text","text":` + fmt.Sprintf("%q", strings.Repeat("You are a careful coding agent. ", 100)) + `,"cache_control":{"type":"ephemeral"}}]`
	history := []string{`{"role":"user","content":[{"type":"text","text":"run the steps"}]}`}
	for i := 0; ; i++ {
		msgs := append([]string(nil), history...)
		last := msgs[len(msgs)-1]
		msgs[len(msgs)-1] = strings.Replace(last, `}]}`, `,"cache_control":{"type":"ephemeral"}}]}`, 1)
		b := `{"model":"claude-sonnet-4-5","max_tokens":100,"system":` + system + `,` +
			`"tools":[{"name":"Bash","description":"runs a command","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
		resp := post(t, ps.URL+"/v1/messages", b, map[string]string{"X-Claude-Code-Session-Id": "dash-1", "X-Api-Key": "k", "User-Agent": "claude-cli/2.0.0 (external, cli)"})
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
		size := 1500
		if i%3 == 1 {
			size = 40_000 // offloaded
		}
		var out strings.Builder
		for j := 0; out.Len() < size; j++ {
			fmt.Fprintf(&out, "step %d line %d: compiling package number %d\n", i, j, j*7)
		}
		o, _ := json.Marshal(out.String())
		history = append(history, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":`+string(o)+`}]}`)
	}
	return scripted{srv: srv, url: ps.URL, fake: fake}
}

// getStats reads GET /agentctx/stats.
func getStats(t *testing.T, url string, header map[string]string) statsBody {
	t.Helper()
	var st statsBody
	if err := json.Unmarshal(get(t, url+proxy.StatsPath, header), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

type statsBody struct {
	Sessions []proxy.SessionStats `json:"sessions"`
	Total    proxy.TotalStats     `json:"total"`
}

func get(t *testing.T, url string, header map[string]string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d: %s", url, resp.StatusCode, data)
	}
	return data
}

// sumOf adds the samples of a counter or gauge family matching labels.
func sumOf(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return math.NaN()
	}
	var sum float64
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// parseMetrics parses a /metrics answer with the Prometheus text parser.
func parseMetrics(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func TestMetricsEqualStats(t *testing.T) {
	s := scriptedSession(t, 14, proxy.Options{Token: "tok"})
	auth := map[string]string{"X-Agentctx-Token": "tok"}
	st := getStats(t, s.url, auth)
	if len(st.Sessions) != 1 {
		t.Fatalf("sessions %d, want 1", len(st.Sessions))
	}
	ss := st.Sessions[0]
	if ss.Compactions == 0 || ss.PrefixChanges <= ss.Compactions || ss.CacheBreaks == 0 {
		t.Fatalf("the script should compact, clear and break the cache: %+v", ss)
	}
	fams := parseMetrics(t, get(t, s.url+proxy.MetricsPath, auth))
	var received, forwarded int
	for _, p := range ss.Timeline {
		received += p.TokensClient
		forwarded += p.TokensForwarded
	}
	api := map[string]string{"api": "anthropic"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentctx_requests_total", api, float64(ss.Requests)},
		{"agentctx_requests_total", map[string]string{"outcome": "edited"}, float64(ss.Edited)},
		{"agentctx_requests_total", map[string]string{"outcome": "error"}, float64(ss.Errors)},
		{"agentctx_session_errors_total", map[string]string{"session": ss.Session}, float64(ss.Errors)},
		{"agentctx_proxy_overhead_seconds", api, float64(ss.Requests)},
		{"agentctx_compactions_total", api, float64(ss.Compactions)},
		{"agentctx_context_tokens_received_total", api, float64(received)},
		{"agentctx_context_tokens_forwarded_total", api, float64(forwarded)},
		{"agentctx_clearing_batches_total", api, float64(ss.PrefixChanges - ss.Compactions)},
		{"agentctx_cache_breaks_total", api, float64(ss.CacheBreaks)},
		{"agentctx_input_tokens_total", api, float64(ss.InputTokens)},
		{"agentctx_output_tokens_total", api, float64(ss.OutputTokens)},
		{"agentctx_cache_read_tokens_total", api, float64(ss.CacheReadTokens)},
		{"agentctx_cache_write_tokens_total", api, float64(ss.CacheWriteTokens)},
		{"agentctx_cost_usd_total", api, ss.CostUSD},
		{"agentctx_cost_without_agentctx_usd_total", api, ss.CostWithoutUSD},
		{"agentctx_saved_usd", api, ss.SavedUSD},
		{"agentctx_summary_requests_total", nil, float64(ss.SummaryRequests)},
		{"agentctx_store_timeouts_total", nil, float64(ss.StoreTimeouts)},
		{"agentctx_store_errors_total", nil, float64(ss.StoreErrors)},
		{"agentctx_sessions", nil, 1},
	} {
		got := sumOf(fams, c.name, c.labels)
		if c.want == 0 && math.IsNaN(got) {
			continue // a vector with no sample yet
		}
		if math.Abs(got-c.want) > 1e-5 {
			t.Errorf("%s%v = %v, stats say %v", c.name, c.labels, got, c.want)
		}
	}
	if received <= forwarded || forwarded <= 0 || len(ss.Timeline) != ss.Requests {
		t.Errorf("tokens received %d, forwarded %d over %d points", received, forwarded, len(ss.Timeline))
	}
	if ss.CostUSD <= 0 || ss.InputTokens+ss.CacheReadTokens <= 0 {
		t.Errorf("nothing billed: %+v", ss.Bill)
	}
	if f := fams["agentctx_proxy_overhead_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("overhead is not a histogram: %v", f)
	}
}

func TestMetricsProtectedLikeStats(t *testing.T) {
	srv, err := proxy.New(proxy.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		header map[string]string
		want   int
	}{
		{nil, http.StatusForbidden},
		{map[string]string{"X-Agentctx-Token": "nope"}, http.StatusForbidden},
		{map[string]string{"Authorization": "Bearer tok"}, http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://example.com"+proxy.MetricsPath, nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%v: %d, want %d", c.header, w.Code, c.want)
		}
	}
	open, _ := proxy.New(proxy.Options{})
	for host, want := range map[string]int{"127.0.0.1:8787": 200, "evil.example:8787": http.StatusMisdirectedRequest} {
		w := httptest.NewRecorder()
		open.ServeHTTP(w, localRequest(http.MethodGet, "http://"+host+proxy.MetricsPath))
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
}

// Two servers in one process count apart: each has its own registry.
func TestMetricsRegistryPerServer(t *testing.T) {
	a, _ := proxy.New(proxy.Options{})
	b, _ := proxy.New(proxy.Options{})
	if a.Registry() == b.Registry() {
		t.Fatal("one registry for two servers")
	}
}

// A fresh proxy exports every per-API series at zero, each outcome of
// requests_total too: a rate or an alert on a counter absent until its
// first increment sees nothing (issue 48).
func TestMetricsPresentAtZero(t *testing.T) {
	srv, err := proxy.New(proxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			series[mf.GetName()]++
			if c := m.GetCounter(); c != nil && c.GetValue() != 0 && strings.HasPrefix(mf.GetName(), "agentctx_") {
				t.Errorf("%s = %v on a fresh proxy", mf.GetName(), c.GetValue())
			}
		}
	}
	for name, want := range map[string]int{
		"agentctx_requests_total": 16, "agentctx_cost_usd_total": 4, "agentctx_cost_without_agentctx_usd_total": 4,
		"agentctx_saved_usd": 4, "agentctx_compactions_total": 4, "agentctx_engine_errors_total": 4,
		"agentctx_proxy_overhead_seconds": 4, "agentctx_summary_requests_total": 4,
	} {
		if series[name] != want {
			t.Errorf("%s: %d series, want %d (4 APIs)", name, series[name], want)
		}
	}
}
