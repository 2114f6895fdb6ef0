package proxy_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/lib/respcompact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

var updateNative = flag.Bool("update-native", false, "rewrite testdata/native_responses.golden")

// nativeResponsesRun drives a Codex-shaped session (store false, the whole
// input each time, one shell call per round) through a proxy in mode, its
// engine compacting at a small limit, and returns the fake upstream and
// the proxy.
func nativeResponsesRun(t *testing.T, mode proxy.ContextManagement, rounds int) (fake *fakeupstream.Server, srv *proxy.Server, dir string) {
	t.Helper()
	fake = fakeupstream.New(fakeupstream.Options{})
	up := startUpstream(t, fake)
	dir = t.TempDir()
	summ := proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{OpenAIURL: up})
	if mode == proxy.ContextNative {
		summ = proxy.NativeSummarizers(proxy.NativeSummarizerOptions{OpenAIURL: up, Fallback: summ})
	}
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
		Pipeline: pipeline.Options{
			WorkspaceDir: filepath.Join(dir, "ws"),
			Workspace:    workspace.Options{InlineLimit: 100_000},
			Compact:      compact.Options{Limit: 6_000, Dir: filepath.Join(dir, "archive"), MaxRetries: -1},
			// At the threshold: the golden pins the compaction's wire
			// form, not the point the priced trigger picks in a window of
			// 6,000 tokens.
			Trigger: pipeline.TriggerThreshold,
		},
		Summarizer: summ,
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	srv, err = proxy.New(proxy.Options{Engine: e, AnthropicURL: up, OpenAIURL: up, Logger: testLogger(t), ContextManagement: mode})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)

	items := []string{`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Run the steps and report."}]}`}
	for i := 1; i <= rounds; i++ {
		id := fmt.Sprintf("call_%03d", i)
		out := strings.Repeat(fmt.Sprintf("step %d output line with some words in it\n", i), 40)
		items = append(items,
			fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"shell","arguments":"{\"command\":\"step %d\"}"}`, id, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, id, quote(out)))
		body := `{"model":"gpt-5","store":false,"stream":false,"instructions":"be brief","tools":[{"type":"function","name":"shell","parameters":{"type":"object"}}],"input":[` + strings.Join(items, ",") + `]}`
		req, _ := http.NewRequest(http.MethodPost, ps.URL+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer dummy")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("session_id", "s1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("round %d: %d", i, resp.StatusCode)
		}
	}
	return fake, srv, dir
}

// shape describes a Responses input: one line per item, its type (and
// role), the call id, and the start of a message's text.
func shape(input []any, dir string) string {
	var b strings.Builder
	for _, iv := range input {
		it, _ := iv.(map[string]any)
		typ, _ := it["type"].(string)
		fmt.Fprintf(&b, "%s", typ)
		if r, ok := it["role"].(string); ok {
			fmt.Fprintf(&b, " %s", r)
		}
		if id, ok := it["call_id"].(string); ok {
			fmt.Fprintf(&b, " %s", id)
		}
		if typ == "message" {
			txt := ""
			if c, ok := it["content"].([]any); ok && len(c) > 0 {
				txt, _ = c[0].(map[string]any)["text"].(string)
			}
			lines := strings.Split(txt, "\n")
			for i, l := range lines {
				if i >= 12 {
					break
				}
				if l = strings.TrimSpace(strings.ReplaceAll(l, dir, "<dir>")); l != "" {
					fmt.Fprintf(&b, "\n    | %.100s", l)
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestNativeResponsesCompaction(t *testing.T) {
	fake, srv, dir := nativeResponsesRun(t, proxy.ContextNative, 14)
	bill := fake.Bill()
	if bill.Rejections != 0 {
		for _, r := range fake.Records() {
			if r.Rejected != "" {
				t.Logf("rejected: %s", r.Rejected)
			}
		}
		t.Fatalf("%d requests rejected", bill.Rejections)
	}
	var compactBody map[string]any
	var forwarded []map[string]any
	for _, r := range fake.Records() {
		var body map[string]any
		json.Unmarshal(r.Body, &body)
		switch r.Path {
		case fakeupstream.CompactPath:
			if compactBody == nil {
				compactBody = body
			}
			if r.Header.Get(proxy.HeaderSummary) == "" || r.Header.Get("Authorization") != "Bearer dummy" {
				t.Errorf("compaction request headers: %v", r.Header)
			}
		case "/v1/responses":
			if r.Header.Get(proxy.HeaderSummary) != "" {
				t.Errorf("a client-side summary request in native mode")
			}
			forwarded = append(forwarded, body)
		}
	}
	if compactBody == nil || bill.Compactions == 0 {
		t.Fatalf("no compaction upstream (%d)", bill.Compactions)
	}
	// The window is sent on every request after the compaction, the same
	// bytes each time (the prompt cache holds).
	var windows []string
	for _, b := range forwarded {
		for _, iv := range b["input"].([]any) {
			if it := iv.(map[string]any); it["type"] == "compaction" {
				j, _ := json.Marshal(it)
				windows = append(windows, string(j))
			}
		}
	}
	if len(windows) < 2 || windows[len(windows)-1] != windows[len(windows)-2] && bill.Compactions == 1 {
		t.Errorf("compaction items sent: %d (last two equal: %v)", len(windows), len(windows) >= 2 && windows[len(windows)-1] == windows[len(windows)-2])
	}
	st := srv.Stats()
	if len(st) != 1 || st[0].ProviderCompactions == 0 || st[0].ProviderCompactions != st[0].Compactions {
		t.Errorf("stats: %+v", st)
	}
	if st[0].SummaryRequests != bill.Compactions {
		t.Errorf("%d summary requests billed to the session, %d compactions upstream", st[0].SummaryRequests, bill.Compactions)
	}
	last := forwarded[len(forwarded)-1]["input"].([]any)
	got := "compact request: model " + compactBody["model"].(string) + "\n" + shape(compactBody["input"].([]any), dir) +
		"\nlast forwarded request:\n" + shape(last, dir)
	// The summary's pointers name the stored originals; every compacted
	// result is kept as an artifact named by its call id, which the
	// read-back tools find.
	if !strings.Contains(got, compact.SummaryTitle) || !strings.Contains(got, "## Stored originals") || !strings.Contains(got, respcompact.Note[:60]) {
		t.Errorf("the summary message lacks its title, note or pointers:\n%s", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "ws", "*", "tool_result_call_001*")); len(m) == 0 {
		t.Errorf("no artifact tool_result_call_001 in the workspace")
	}
	if strings.Contains(got, respcompact.Marker) {
		t.Errorf("the marker went upstream:\n%s", got)
	}
	golden := filepath.Join("testdata", "native_responses.golden")
	if *updateNative {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("request shape differs from %s (-update-native to rewrite):\n%s", golden, got)
	}
}

// TestNativeResponsesClientMode: the client mode never calls the
// provider's compaction.
func TestNativeResponsesClientMode(t *testing.T) {
	fake, srv, _ := nativeResponsesRun(t, proxy.ContextClient, 14)
	for _, r := range fake.Records() {
		if r.Path == fakeupstream.CompactPath {
			t.Fatalf("client mode called the provider's compaction")
		}
	}
	st := srv.Stats()
	if st[0].Compactions == 0 || st[0].ProviderCompactions != 0 {
		t.Errorf("client mode: %d compactions, %d by the provider", st[0].Compactions, st[0].ProviderCompactions)
	}
}

// TestNativeSummarizersFallback: the provider's compaction only for
// Responses requests with credentials; a failed one, and every other
// request, gets the fallback's summary, without the encrypted windows of
// earlier compactions.
func TestNativeSummarizersFallback(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
	}))
	defer failing.Close()
	fake := fakeupstream.New(fakeupstream.Options{})
	ok := startUpstream(t, fake)
	first, err := respcompact.Compact(t.Context(), nil, respcompact.Request{BaseURL: ok, Model: "m", Input: []json.RawMessage{json.RawMessage(`{"role":"user","content":"start"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	earlier, _ := respcompact.Summary(first.Window)
	r := compact.Request{Messages: []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text(earlier)),
		agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("next step"))}}
	var seen []string
	fallback := func(req *proxy.Request) compact.Summarizer {
		return compact.SummarizerFunc(func(_ context.Context, r compact.Request) (string, error) {
			for _, m := range r.Messages {
				seen = append(seen, m.Content.Text())
			}
			return compact.SummaryTitle + "\n\nby the fallback", nil
		})
	}
	auth := http.Header{"Authorization": {"Bearer k"}}
	for _, tc := range []struct {
		name     string
		url      string
		req      *proxy.Request
		provider bool
	}{
		{"responses", ok, &proxy.Request{API: proxy.APIResponses, Model: "m", Header: auth}, true},
		{"upstream fails", failing.URL, &proxy.Request{API: proxy.APIResponses, Model: "m", Header: auth}, false},
		{"no credentials", ok, &proxy.Request{API: proxy.APIResponses, Model: "m", Header: http.Header{}}, false},
		{"chat completions", ok, &proxy.Request{API: proxy.APIChat, Model: "m", Header: auth}, false},
	} {
		seen = nil
		s, err := proxy.NativeSummarizers(proxy.NativeSummarizerOptions{OpenAIURL: tc.url, Fallback: fallback})(tc.req).Summarize(t.Context(), r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.Contains(s, respcompact.Marker); got != tc.provider {
			t.Errorf("%s: provider's window %v, want %v: %s", tc.name, got, tc.provider, s)
		}
		if strings.Contains(strings.Join(seen, "\n"), respcompact.Marker) && tc.req.API == proxy.APIResponses {
			t.Errorf("%s: the fallback got an encrypted window", tc.name)
		}
	}
}

// TestNativeSummarizersBoundInput: the middle sent to be compacted is cut
// to MaxInputChars (originals whole would overflow the model's window: a
// 400 and the fallback's summary, as a 120-step Codex session showed).
func TestNativeSummarizersBoundInput(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{ContextWindow: 20_000})
	up := startUpstream(t, fake)
	asst := agentctx.NewMessage(agentctx.RoleAssistant, agentctx.Text(""))
	asst.ToolCalls = []agentctx.ToolCall{{ID: "c1", Type: "function", Function: agentctx.FunctionCall{Name: "shell", Arguments: "{}"}}}
	res := agentctx.NewMessage(agentctx.RoleTool, agentctx.Text(strings.Repeat("a long output line\n", 12_000)))
	res.ToolCallID = "c1"
	r := compact.Request{Messages: []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("go")), asst, res}}
	req := &proxy.Request{API: proxy.APIResponses, Model: "m", Header: http.Header{"Authorization": {"Bearer k"}}}
	s, err := proxy.NativeSummarizers(proxy.NativeSummarizerOptions{OpenAIURL: up, MaxInputChars: 40_000})(req).Summarize(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, respcompact.Marker) || fake.Bill().Rejections != 0 {
		t.Errorf("the provider did not compact (%d rejections): %.200s", fake.Bill().Rejections, s)
	}
}
