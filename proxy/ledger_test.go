package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
)

// ledgerUpstream answers every Messages request with a fixed usage, and
// 500 for the model "fail".
func ledgerUpstream(t *testing.T) *httptest.Server {
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"model":"fail"`)) {
			http.Error(w, `{"type":"error"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// 100×3 + 2000×0.3 + 300×3.75 + 50×15 = 2775 → $0.002775
		io.WriteString(w, `{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":100,"cache_read_input_tokens":2000,"cache_creation_input_tokens":300,"output_tokens":50}}`)
	}))
	t.Cleanup(us.Close)
	return us
}

func ledgerOf(t *testing.T, s session.Store) session.Ledger {
	t.Helper()
	l, err := session.LedgerOf(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLedgerRecordsAnsweredRequests: each answered request is one entry
// with its usage, bill, session, model, client family and project; a
// failed request none; the entries add up to the statistics.
func TestLedgerRecordsAnsweredRequests(t *testing.T) {
	us := ledgerUpstream(t)
	store := memsession.New()
	now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Ledger: ledgerOf(t, store), Project: "/home/u/proj", Namespace: "team",
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	for _, r := range []struct{ session, model, ua string }{
		{"a", "claude-sonnet-4-5", "claude-cli/2.0.31 (external, cli)"},
		{"a", "claude-sonnet-4-5", "claude-cli/2.0.31 (external, cli)"},
		{"b", "claude-sonnet-4-5", "codex_cli_rs/0.50.0"},
		{"b", "fail", "codex_cli_rs/0.50.0"},
	} {
		resp := post(t, ps.URL+"/v1/messages", `{"model":"`+r.model+`","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"X-Claude-Code-Session-Id": r.session, "User-Agent": r.ua})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	total := srv.Total()
	if err := srv.Close(); err != nil { // appends what is queued
		t.Fatal(err)
	}
	got, err := ledgerOf(t, store).Query(context.Background(), session.LedgerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := session.LedgerEntry{Time: now, Session: "a", Namespace: "team", API: "anthropic", Model: "claude-sonnet-4-5", Client: "claude-code",
		Project: "/home/u/proj", InputTokens: 100, CacheReadTokens: 2000, CacheWriteTokens: 300, OutputTokens: 50,
		CostUSD: 0.002775, CostWithoutUSD: 0.002775}
	if len(got) != 3 {
		t.Fatalf("%d entries, want 3 (the failed request has none): %+v", len(got), got)
	}
	var sum float64
	for i, e := range got {
		w := want
		if i == 2 {
			w.Session, w.Client = "b", "codex"
		}
		if !near(e.CostUSD, w.CostUSD) || !near(e.CostWithoutUSD, w.CostWithoutUSD) {
			t.Errorf("entry %d: cost %v without %v, want %v", i, e.CostUSD, e.CostWithoutUSD, w.CostUSD)
		}
		e.CostUSD, e.CostWithoutUSD = w.CostUSD, w.CostWithoutUSD
		if e != w {
			t.Errorf("entry %d =\n%+v\nwant\n%+v", i, e, w)
		}
		sum += got[i].CostUSD
	}
	if !near(sum, total.CostUSD) {
		t.Errorf("entries sum to $%v, the statistics' total is $%v", sum, total.CostUSD)
	}
}

// failingLedger fails every Append; blocked, when set, holds each Append
// until it is closed.
type failingLedger struct {
	mu      sync.Mutex
	calls   int
	blocked chan struct{}
}

func (f *failingLedger) Append(ctx context.Context, _ []session.LedgerEntry) error {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.blocked != nil {
		<-f.blocked
	}
	return errors.New("disk on fire")
}

func (f *failingLedger) Query(context.Context, session.LedgerFilter) ([]session.LedgerEntry, error) {
	return nil, errors.New("disk on fire")
}

func (f *failingLedger) Scan(context.Context, session.LedgerFilter, func(session.LedgerEntry) error) error {
	return errors.New("disk on fire")
}

// TestLedgerNeverFailsRequests: a ledger that fails, or that does not
// answer, neither fails nor holds a request; its failure is logged once.
func TestLedgerNeverFailsRequests(t *testing.T) {
	for _, c := range []struct {
		name  string
		block bool
	}{{"failing", false}, {"stuck", true}} {
		t.Run(c.name, func(t *testing.T) {
			us := ledgerUpstream(t)
			var logs bytes.Buffer
			var mu sync.Mutex
			l := &failingLedger{}
			if c.block {
				l.blocked = make(chan struct{})
			}
			srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Ledger: l, Logger: newLockedLogger(&logs, &mu)})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			defer ps.Close()
			for i := range 5 {
				resp := post(t, ps.URL+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
					map[string]string{"X-Claude-Code-Session-Id": fmt.Sprint("s", i)})
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d: status %d, want 200", i, resp.StatusCode)
				}
			}
			if c.block {
				close(l.blocked)
			}
			srv.Close()
			mu.Lock()
			defer mu.Unlock()
			if n := strings.Count(logs.String(), "ledger append failed"); n != 1 {
				t.Fatalf("the failure logged %d times, want once:\n%s", n, logs.String())
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("an error logged:\n%s", logs.String())
			}
		})
	}
}

func TestClientFamily(t *testing.T) {
	for _, c := range []struct{ ua, want string }{
		{"claude-cli/2.0.31 (external, cli)", "claude-code"},
		{"codex_cli_rs/0.50.0 (Linux; x86_64)", "codex"},
		{"codex_exec/0.50.0", "codex"},
		{"OpenAI/Python 1.2.3", "openai"},
		{"Go-http-client/1.1", "go-http-client"},
		{"", ""},
	} {
		if got := proxy.ClientFamily(c.ua); got != c.want {
			t.Errorf("ClientFamily(%q) = %q, want %q", c.ua, got, c.want)
		}
	}
}

// TestStartFromLedger: a proxy restarted over the same store starts its
// totals and /metrics counters from the ledger: what the proxy before it
// billed, not what was recorded after it started.
func TestStartFromLedger(t *testing.T) {
	us := ledgerUpstream(t)
	store := memsession.New()
	t0 := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	clock := func(at time.Time) func() time.Time { return func() time.Time { return at } }
	send := func(ps *httptest.Server, n int) {
		for range n {
			resp := post(t, ps.URL+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
				map[string]string{"X-Claude-Code-Session-Id": "a"})
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	first, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Ledger: ledgerOf(t, store), Now: clock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(first)
	send(ps, 2)
	ps.Close()
	before := first.Total()
	first.Close()

	second, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Ledger: ledgerOf(t, store), Now: clock(t0.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	// Recorded after the second proxy started (another replica): not its past.
	if err := ledgerOf(t, store).Append(context.Background(), []session.LedgerEntry{{Time: t0.Add(2 * time.Hour), API: "anthropic", CostUSD: 100}}); err != nil {
		t.Fatal(err)
	}
	if got := second.Total(); got.Requests != 0 || got.CostUSD != 0 {
		t.Fatalf("total before StartFromLedger = %+v, want zero", got)
	}
	if err := second.StartFromLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := second.StartFromLedger(context.Background()); !errors.Is(err, proxy.ErrLedgerStarted) {
		t.Fatalf("StartFromLedger again: %v, want ErrLedgerStarted", err)
	}
	if got := second.Total(); got != before || got.Requests != 2 {
		t.Fatalf("total after a restart = %+v, want the first proxy's %+v", got, before)
	}
	ps = httptest.NewServer(second)
	defer ps.Close()
	send(ps, 1)
	if got := second.Total(); got.Requests != 3 || !near(got.CostUSD, 3*0.002775) {
		t.Errorf("total after one more request = %+v, want 3 requests, $%v", got, 3*0.002775)
	}
	if got := second.TotalSinceStart(); got.Requests != 1 || !near(got.CostUSD, 0.002775) {
		t.Errorf("total since start = %+v, want 1 request, $0.002775", got)
	}
	resp, err := http.Get(ps.URL + proxy.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentctx_requests_total{api="anthropic",outcome="unedited"} 3`,
		`agentctx_cost_usd_total{api="anthropic"} 0.008325`,
		`agentctx_input_tokens_total{api="anthropic"} 300`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestLedgerTenantNamespace: with Tenants an entry names its tenant's
// namespace.
func TestLedgerTenantNamespace(t *testing.T) {
	us := ledgerUpstream(t)
	store := memsession.New()
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Ledger: ledgerOf(t, store), Namespace: "team", Tenants: true})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	hdr := http.Header{"X-Api-Key": {"sk-one"}}
	tenant, _ := proxy.Tenant(hdr)
	resp := post(t, ps.URL+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"X-Api-Key": "sk-one", "X-Claude-Code-Session-Id": "a"})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	srv.Close()
	got, err := ledgerOf(t, store).Query(context.Background(), session.LedgerFilter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("Query = %+v, %v; want one entry", got, err)
	}
	if want := proxy.TenantNamespace("team", tenant); got[0].Namespace != want || strings.Contains(got[0].Namespace, "sk-one") {
		t.Fatalf("namespace %q, want %q", got[0].Namespace, want)
	}
}

// TestStartFromLedgerCounters: the ledger's past is counted by API,
// outcome and compaction.
func TestStartFromLedgerCounters(t *testing.T) {
	store := memsession.New()
	t0 := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	err := ledgerOf(t, store).Append(context.Background(), []session.LedgerEntry{
		{Time: t0, API: "anthropic", Edited: true, Compacted: true, CostUSD: 0.5, CostWithoutUSD: 2, InputTokens: 7},
		{Time: t0, API: "anthropic", Edited: true, CostUSD: 0.25, CostWithoutUSD: 0.5},
		{Time: t0, API: "anthropic", CostUSD: 0.25, CostWithoutUSD: 0.25, OutputTokens: 5},
		{Time: t0, API: "openai-responses", Edited: true, Compacted: true, CostUSD: 1, CostWithoutUSD: 3, CacheReadTokens: 11},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Options{Ledger: ledgerOf(t, store), Now: func() time.Time { return t0.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.StartFromLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Total(); got.Requests != 4 || got.CostUSD != 2 || got.CostWithoutUSD != 5.75 || got.SavedUSD != 3.75 {
		t.Errorf("total = %+v, want 4 requests, $2 instead of $5.75", got)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	resp, err := http.Get(ps.URL + proxy.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentctx_requests_total{api="anthropic",outcome="edited"} 2`,
		`agentctx_requests_total{api="anthropic",outcome="unedited"} 1`,
		`agentctx_requests_total{api="openai-responses",outcome="edited"} 1`,
		`agentctx_compactions_total{api="anthropic"} 1`,
		`agentctx_compactions_total{api="openai-responses"} 1`,
		`agentctx_cost_usd_total{api="anthropic"} 1`,
		`agentctx_cost_without_agentctx_usd_total{api="anthropic"} 2.75`,
		`agentctx_saved_usd{api="openai-responses"} 2`,
		`agentctx_input_tokens_total{api="anthropic"} 7`,
		`agentctx_output_tokens_total{api="anthropic"} 5`,
		`agentctx_cache_read_tokens_total{api="openai-responses"} 11`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
