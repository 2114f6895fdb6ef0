package proxy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/mcpserver"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

func TestDashboardAPI(t *testing.T) {
	s := scriptedSession(t, 14, proxy.Options{})
	st := getStats(t, s.url, nil)
	ss := st.Sessions[0]
	if len(ss.Timeline) != ss.Requests || ss.Client != "claude-cli/2.0.0" || ss.Model != "claude-sonnet-4-5" || ss.LastActivity.IsZero() {
		t.Fatalf("view: client %q model %q last %v, %d points for %d requests", ss.Client, ss.Model, ss.LastActivity, len(ss.Timeline), ss.Requests)
	}
	if ss.ClearingBatches != ss.PrefixChanges-ss.Compactions {
		t.Errorf("clearing batches %d, prefix changes %d, compactions %d", ss.ClearingBatches, ss.PrefixChanges, ss.Compactions)
	}
	var sum proxy.TimelinePoint
	marks := map[string]int{}
	for _, p := range ss.Timeline {
		sum.CacheReadTokens += p.CacheReadTokens
		sum.CacheWriteTokens += p.CacheWriteTokens
		sum.InputTokens += p.InputTokens
		if p.Compacted {
			marks["compacted"]++
		}
		if p.Clearing {
			marks["clearing"]++
		}
		if p.CacheBreak {
			marks["break"]++
		}
		if p.Offloaded > 0 {
			marks["offloaded"]++
		}
	}
	// The summary requests are billed to the session, not to a point.
	if sum.CacheReadTokens > ss.CacheReadTokens || sum.InputTokens > ss.InputTokens || marks["compacted"] != ss.Compactions ||
		marks["clearing"] != ss.ClearingBatches || marks["break"] != ss.CacheBreaks || marks["offloaded"] == 0 {
		t.Errorf("timeline %+v, marks %v; stats %+v", sum, marks, ss)
	}
	last := ss.Timeline[len(ss.Timeline)-1]
	if last.TokensClient != ss.TokensBefore || last.TokensForwarded != ss.TokensAfter {
		t.Errorf("last point %+v, stats tokens %d/%d", last, ss.TokensBefore, ss.TokensAfter)
	}

	var c proxy.Composition
	if err := json.Unmarshal(get(t, s.url+proxy.DashboardContextPath+"?session=dash-1", nil), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Known || c.System == 0 || c.Tools == 0 || c.Messages == 0 || c.References == 0 || c.Summary == 0 {
		t.Errorf("composition %+v", c)
	}
	// What fills the context adds up to about what the Engine counted.
	if total := c.System + c.Tools + c.Messages + c.ToolResults + c.References + c.Summary; total < ss.TokensAfter/2 || total > ss.TokensAfter*2 {
		t.Errorf("composition adds up to %d, the engine counted %d", total, ss.TokensAfter)
	}

	var page proxy.ArtifactsPage
	if err := json.Unmarshal(get(t, s.url+proxy.DashboardArtifactsPath+"?session=dash-1", nil), &page); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	big := ""
	for _, a := range page.Artifacts {
		kinds[a.Metadata[workspace.KeyContextType]]++
		if a.Chars > 39_000 && big == "" {
			big = a.ID
		}
	}
	if kinds[workspace.ContextToolResult] == 0 || kinds[pipeline.ContextCompactionArchive] == 0 || big == "" {
		t.Fatalf("artifacts by kind %v (a big one: %q)", kinds, big)
	}
	// The viewer reads page by page, as the MCP tool does.
	var rp proxy.ReadPage
	if err := json.Unmarshal(get(t, s.url+proxy.DashboardReadPath+"?id="+url.QueryEscape(big), nil), &rp); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rp.Text, "offset=") || !strings.HasPrefix(rp.Text, "step ") {
		t.Errorf("first page: %.200q ... %.300q", rp.Text, rp.Text[max(0, len(rp.Text)-300):])
	}
	resp, err := http.Get(s.url + proxy.DashboardReadPath + "?id=nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown artifact: %d", resp.StatusCode)
	}
}

func TestDashboardProtectedLikeStats(t *testing.T) {
	srv, err := proxy.New(proxy.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target string
		header map[string]string
		want   int
	}{
		{"/agentctx/", nil, http.StatusForbidden},
		{"/agentctx/app.js", nil, http.StatusForbidden},
		{"/agentctx/?token=nope", nil, http.StatusForbidden},
		{"/agentctx/api/context?session=x", nil, http.StatusForbidden},
		{"/agentctx/api/artifacts?session=x", nil, http.StatusForbidden},
		{"/agentctx/api/read?id=x", nil, http.StatusForbidden},
		{"/agentctx/api/read?id=x", map[string]string{"X-Agentctx-Token": "nope"}, http.StatusForbidden},
		{"/agentctx/?token=tok", nil, http.StatusOK},
		{"/agentctx/app.js?token=tok", nil, http.StatusOK},
		{"/agentctx/app.css", map[string]string{"X-Agentctx-Token": "tok"}, http.StatusOK},
		{"/agentctx/api/context?session=x", map[string]string{"X-Agentctx-Token": "tok"}, http.StatusNotFound},
		{"/agentctx/stats?token=tok", nil, http.StatusForbidden}, // stats takes the header only
		{"/agentctx/nothing-here", map[string]string{"X-Agentctx-Token": "tok"}, http.StatusNotFound},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://proxy.example"+c.target, nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s %v: %d, want %d", c.target, c.header, w.Code, c.want)
		}
		if c.target == "/agentctx/?token=tok" && !strings.Contains(w.Body.String(), `src="app.js?token=tok"`) {
			t.Errorf("the page's assets do not carry its token: %s", w.Body.String())
		}
	}
	open, _ := proxy.New(proxy.Options{})
	for host, want := range map[string]int{"localhost:8787": 200, "evil.example": http.StatusMisdirectedRequest} {
		w := httptest.NewRecorder()
		open.ServeHTTP(w, localRequest(http.MethodGet, "http://"+host+"/agentctx/"))
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
		if want == 200 && (!strings.Contains(w.Body.String(), `src="app.js"`) || w.Header().Get("Content-Security-Policy") == "") {
			t.Errorf("page: %s %v", w.Body.String(), w.Header())
		}
	}
}

// A live session's report is its statistics' timeline and its context.
func TestFetchReport(t *testing.T) {
	s := scriptedSession(t, 6, proxy.Options{Token: "tok"})
	ctx := t.Context()
	rep, err := proxy.FetchReport(ctx, nil, s.url, "tok", "dash-1")
	if err != nil {
		t.Fatal(err)
	}
	ss := s.srv.Stats()[0]
	c, _ := s.srv.Composition("dash-1")
	if rep.Requests != ss.Requests || len(rep.Timeline) != ss.Requests || rep.After != c || rep.CostUSD != ss.CostUSD {
		t.Errorf("report %+v, stats %+v", rep, ss)
	}
	var text strings.Builder
	if err := proxy.WriteReportText(&text, rep); err != nil || strings.Count(text.String(), "\n") < ss.Requests+4 {
		t.Errorf("text %v:\n%s", err, text.String())
	}
	for _, c := range []struct{ token, key string }{{"tok", "nope"}, {"bad", "dash-1"}} {
		if _, err := proxy.FetchReport(ctx, nil, s.url, c.token, c.key); !errors.Is(err, proxy.ErrReport) || strings.Contains(err.Error(), "bad") {
			t.Errorf("%v: %v", c, err)
		}
	}
}

// A Codex (Responses) session's context is composed like the others: its
// items counted as the messages they map onto, unchanged requests too.
func TestCompositionOfResponsesSession(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{})
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, e)
	body := `{"model":"gpt-5","instructions":"x","store":false,"input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"cmd\":[\"ls\"]}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"a.go\nb.go\n"}]}`
	resp := post(t, base+"/v1/responses", body, map[string]string{proxy.HeaderSession: "resp-1"})
	io.ReadAll(resp.Body)
	resp.Body.Close()
	var c proxy.Composition
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !c.Known; time.Sleep(10 * time.Millisecond) {
		if err := json.Unmarshal(get(t, base+proxy.DashboardContextPath+"?session=resp-1", nil), &c); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Known || c.Messages == 0 || c.ToolResults == 0 {
		t.Fatalf("composition of a Responses session: %+v", c)
	}
}

// A replayed transcript's timeline splits each request's input as the
// replay's simulated prompt cache bills the request as prepared: read from
// the cache where it extends the one before, written where it does not.
func TestReplayReportCache(t *testing.T) {
	doc, err := agentctx.ReadFile(t.Context(), filepath.Join("..", "examples", "session.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := proxy.ReplayReport(t.Context(), "session.json", doc, replay.Options{Options: pipeline.Options{
		Compact: compact.Options{Limit: 20_000, Dir: t.TempDir()}}})
	if err != nil {
		t.Fatal(err)
	}
	var read, write int
	for i, p := range rep.Timeline {
		read += p.CacheReadTokens
		write += p.CacheWriteTokens
		if p.InputTokens+p.CacheReadTokens+p.CacheWriteTokens == 0 {
			t.Errorf("request %d: no input", i+1)
		}
		if i == 0 && p.CacheReadTokens != 0 {
			t.Errorf("the first request read %d tokens from the cache", p.CacheReadTokens)
		}
	}
	if read == 0 || write == 0 {
		t.Errorf("cache read %d, written %d: the timeline does not show the cache", read, write)
	}
	var text strings.Builder
	if err := proxy.WriteReportText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(text.String(), "\n"); len(lines) < 4 || !strings.Contains(lines[2], "cache read") {
		t.Errorf("table:\n%s", text.String())
	}
}

// The dashboard works offline: its page, script and styles come from the
// binary, name no other origin, and the page may load from its own only.
func TestDashboardOffline(t *testing.T) {
	srv, err := proxy.New(proxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "app.js", "app.css"} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, localRequest(http.MethodGet, "http://127.0.0.1:8787"+proxy.DashboardPath+name))
		body := strings.ReplaceAll(w.Body.String(), `"http://www.w3.org/2000/svg"`, "") // a namespace, not a fetch
		if w.Code != 200 || len(body) < 500 {
			t.Fatalf("%q: %d, %d bytes", name, w.Code, len(body))
		}
		for _, ref := range []string{"http://", "https://", `src="//`, `href="//`, "@import", "url("} {
			if strings.Contains(body, ref) {
				t.Errorf("%q refers elsewhere: %s", name, ref)
			}
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%q: Content-Security-Policy %q", name, csp)
		}
	}
}

// A session with more artifacts than a read-back page holds is listed page
// after page (the offset the dashboard's "More artifacts" sends): every
// artifact once, the notice on every page but the last.
func TestDashboardArtifactsPaged(t *testing.T) {
	store := memstore.New()
	const n = 120
	for i := range n {
		a := workspace.Artifact{Info: workspace.Info{ID: fmt.Sprintf("tool_result_%03d", i), Metadata: workspace.Metadata{
			workspace.KeySessionID: "s", workspace.KeyContextType: workspace.ContextToolResult}}, Content: "output\n"}
		if _, err := store.Put(t.Context(), "default", a); err != nil {
			t.Fatal(err)
		}
	}
	other := workspace.Artifact{Info: workspace.Info{ID: "tool_result_other", Metadata: workspace.Metadata{workspace.KeySessionID: "t"}}, Content: "x"}
	if _, err := store.Put(t.Context(), "default", other); err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Options{ReadBack: mcpserver.New(store, mcpserver.Options{MaxChars: 4000}).Call})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, srv)
	seen := map[string]bool{}
	pages := 0
	for off := 0; ; pages++ {
		var page proxy.ArtifactsPage
		if err := json.Unmarshal(get(t, fmt.Sprintf("%s%s?session=s&offset=%d", base, proxy.DashboardArtifactsPath, off), nil), &page); err != nil {
			t.Fatal(err)
		}
		if page.Offset != off || len(page.Artifacts) == 0 {
			t.Fatalf("page at %d: offset %d, %d artifacts", off, page.Offset, len(page.Artifacts))
		}
		for _, a := range page.Artifacts {
			if seen[a.ID] || a.Metadata[workspace.KeySessionID] != "s" {
				t.Errorf("%s listed twice or of another session", a.ID)
			}
			seen[a.ID] = true
		}
		off += len(page.Artifacts)
		if off == n {
			if page.Notice != "" {
				t.Errorf("last page has a notice: %q", page.Notice)
			}
			break
		}
		if !strings.Contains(page.Notice, "offset") {
			t.Fatalf("page at %d cut without a notice (%d listed)", page.Offset, len(page.Artifacts))
		}
	}
	if len(seen) != n || pages < 2 {
		t.Errorf("%d artifacts in %d pages, want %d in several", len(seen), pages+1, n)
	}
}
