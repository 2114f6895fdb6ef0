package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/dirstore"
)

// hungSessions is a session store that never answers (a database stopped
// with SIGSTOP): every call waits until its ctx ends.
type hungSessions struct{ session.Store }

func (hungSessions) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	<-ctx.Done()
	return nil, 0, ctx.Err()
}

func (hungSessions) Save(ctx context.Context, ns, id string, data []byte, v int64) (int64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// A hung store costs a request its store timeout, not the client's
// patience: the proxy forwards it unedited and counts the timeout (issue
// 24: requests hung 90 s until the client gave up).
func TestHungStoreForwardsTheOriginal(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{
		Sessions:     hungSessions{memsession.New()},
		StoreTimeout: 200 * time.Millisecond,
	}})
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, e)
	start := time.Now()
	resp := post(t, base+"/v1/messages", toolTurns(2, 500), map[string]string{proxy.HeaderSession: "s1"})
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || took > 3*time.Second {
		t.Fatalf("status %d after %v: want the original forwarded within the store timeout", resp.StatusCode, took)
	}
	if n := len(fake.Records()); n != 1 {
		t.Fatalf("%d requests upstream, want 1", n)
	}
	got := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, st := range statsOf(t, base) {
			got = st.StoreTimeouts
		}
		if got > 0 {
			break
		}
	}
	if got != 1 {
		t.Fatalf("store_timeouts = %d, want 1", got)
	}
	for _, st := range statsOf(t, base) {
		if st.StoreErrors != 1 {
			t.Errorf("store_errors = %d, want 1 (a timeout is a store error too)", st.StoreErrors)
		}
	}
	fams := parseMetrics(t, getBody(t, base+proxy.MetricsPath))
	api := map[string]string{"api": "anthropic"}
	for name, want := range map[string]float64{"agentctx_store_timeouts_total": 1, "agentctx_store_errors_total": 1, "agentctx_engine_errors_total": 1} {
		if got := sumOf(fams, name, api); got != want {
			t.Errorf("/metrics %s = %v, want %v", name, got, want)
		}
	}
	if got := sumOf(fams, "agentctx_requests_total", map[string]string{"outcome": proxy.OutcomeError}); got != 1 {
		t.Errorf("/metrics requests with outcome error = %v, want 1", got)
	}
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}

func statsOf(t *testing.T, base string) []proxy.SessionStats {
	t.Helper()
	resp, err := http.Get(base + proxy.StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Sessions []proxy.SessionStats `json:"sessions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Sessions
}

// With Tenants, two clients whose requests are alike (the same session
// header, the same history) are two sessions whose artifacts live apart,
// each in its tenant's namespace (issue 24: a shared proxy mixed them).
func TestTenantsLiveApart(t *testing.T) {
	dir := t.TempDir()
	store, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{Store: store, Workspace: workspace.Options{InlineLimit: 1000}}})
	fake := fakeupstream.New(fakeupstream.Options{})
	us := newServer(t, fake)
	srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: us, Tenants: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, srv)
	for _, key := range []string{"key-of-tenant-one", "key-of-tenant-two"} {
		resp := post(t, base+"/v1/messages", toolTurns(2, 2000), map[string]string{"X-Api-Key": key, proxy.HeaderSession: "s1"})
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	sessions := statsOf(t, base)
	if len(sessions) != 2 || sessions[0].Session == sessions[1].Session {
		t.Fatalf("sessions %+v: want two", sessions)
	}
	for _, key := range []string{"key-of-tenant-one", "key-of-tenant-two"} {
		tenant, _ := proxy.Tenant(http.Header{"X-Api-Key": {key}})
		list, err := store.Query(t.Context(), proxy.TenantNamespace("default", tenant), workspace.Filter{})
		if err != nil || len(list) == 0 {
			t.Fatalf("tenant %s: %d artifacts, %v", tenant, len(list), err)
		}
	}
	if list, _ := store.Query(t.Context(), "default", workspace.Filter{}); len(list) != 0 {
		t.Fatalf("%d artifacts outside the tenants' namespaces", len(list))
	}
}

// failingSessions is a session store that answers every call with an
// error (a database that refuses connections).
type failingSessions struct{ session.Store }

func (failingSessions) Load(ctx context.Context, ns, id string) ([]byte, int64, error) {
	return nil, 0, errors.New("connection refused")
}

// A store that fails (not one that hangs) is counted as a store error, not
// a timeout, in the stats and in /metrics; the request goes upstream
// unedited.
func TestFailingStoreCounted(t *testing.T) {
	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{Sessions: failingSessions{memsession.New()}}})
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, e)
	resp := post(t, base+"/v1/messages", toolTurns(2, 500), map[string]string{proxy.HeaderSession: "s1"})
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(fake.Records()) != 1 {
		t.Fatalf("status %d, %d requests upstream", resp.StatusCode, len(fake.Records()))
	}
	var errs, timeouts int
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && errs == 0; time.Sleep(10 * time.Millisecond) {
		for _, st := range statsOf(t, base) {
			errs, timeouts = st.StoreErrors, st.StoreTimeouts
		}
	}
	if errs != 1 || timeouts != 0 {
		t.Fatalf("store_errors %d, store_timeouts %d: want 1 and 0", errs, timeouts)
	}
	fams := parseMetrics(t, getBody(t, base+proxy.MetricsPath))
	api := map[string]string{"api": "anthropic"}
	for name, want := range map[string]float64{"agentctx_store_errors_total": 1, "agentctx_engine_errors_total": 1} {
		if got := sumOf(fams, name, api); got != want {
			t.Errorf("/metrics %s = %v, want %v", name, got, want)
		}
	}
	if got := sumOf(fams, "agentctx_store_timeouts_total", api); got != 0 && !math.IsNaN(got) {
		t.Errorf("/metrics store timeouts = %v, want none", got)
	}
}
