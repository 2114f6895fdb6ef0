package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/workspace"
	"github.com/agentctx/agentctx/workspace/memstore"
)

var artifactRef = regexp.MustCompile(`tool_result_[A-Za-z0-9_-]+`)

// Nothing is stored for a request the upstream refuses (issue 49.4: 20
// POSTs refused 401 left 180 MB in 400 artifacts): the artifacts it
// created are removed and its session state goes back to what it was,
// while what earlier accepted requests stored stays; the same request
// accepted afterwards stores its results again, and every artifact the
// body it sends names exists.
func TestRefusedRequestStoresNothing(t *testing.T) {
	var mu sync.Mutex
	var lastAccepted string
	base, store, _ := storingProxy(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch key := r.Header.Get("X-Api-Key"); key {
		case "good":
			mu.Lock()
			lastAccepted = string(body)
			mu.Unlock()
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":1}}`)
		case "overloaded":
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		}
	})
	send := func(body, key, session string) int {
		t.Helper()
		hdr := map[string]string{"Anthropic-Version": "2023-06-01"}
		if key != "" {
			hdr["X-Api-Key"] = key
		}
		if session != "" {
			hdr["X-Agentctx-Session"] = session
		}
		resp := post(t, base+"/v1/messages", body, hdr)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ids := func() map[string]bool {
		t.Helper()
		m := map[string]bool{}
		nss, _ := store.Namespaces(t.Context())
		for _, ns := range nss {
			list, err := store.Query(t.Context(), ns, workspace.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range list {
				m[ns+"/"+in.ID] = true
			}
		}
		return m
	}

	// An accepted request of session s stores its three results.
	if code := send(toolBody("anthropic", "toolu_a", 3), "good", "s"); code != 200 {
		t.Fatalf("accepted request: %d", code)
	}
	kept := ids()
	if len(kept) != 3 {
		t.Fatalf("%d artifacts after the accepted request, want 3: %v", len(kept), kept)
	}
	// The same conversation, three more results, refused: 401 and 529
	// (the client retries); refused fresh conversations, without a key
	// or with a wrong one, as a web page's would be.
	grown := toolBody("anthropic", "toolu_a", 6)
	for _, c := range []struct{ name, body, key, session string }{
		{"a longer conversation, wrong key", grown, "wrong", "s"},
		{"a longer conversation, overloaded", grown, "overloaded", "s"},
		{"a new conversation, no key", toolBody("anthropic", "toolu_x", 5), "", ""},
		{"a new conversation, wrong key", toolBody("anthropic", "toolu_y", 5), "wrong", ""},
		{"a new session, wrong key", toolBody("anthropic", "toolu_z", 5), "wrong", "z"},
	} {
		for i := range 4 {
			body := strings.ReplaceAll(c.body, "log line", fmt.Sprintf("log line (try %d)", i))
			if c.session == "s" {
				body = c.body // the same request again
			}
			if code := send(body, c.key, c.session); code < 400 {
				t.Fatalf("%s: %d, want a refusal", c.name, code)
			}
		}
		if got := ids(); len(got) != len(kept) {
			t.Errorf("%s: %d artifacts after its refusals, want the %d stored before", c.name, len(got), len(kept))
		}
	}
	got := ids()
	for id := range kept {
		if !got[id] {
			t.Errorf("%s, stored by an accepted request, was removed", id)
		}
	}

	// Accepted at last: the three new results are stored, and what goes
	// upstream names only artifacts that exist.
	if code := send(grown, "good", "s"); code != 200 {
		t.Fatalf("accepted retry: %d", code)
	}
	if got := ids(); len(got) != 6 {
		t.Errorf("%d artifacts after the accepted retry, want 6: %v", len(got), got)
	}
	mu.Lock()
	sent := lastAccepted
	mu.Unlock()
	refs := artifactRef.FindAllString(sent, -1)
	if len(refs) == 0 {
		t.Fatalf("the accepted retry names no artifact: the test offloads nothing")
	}
	nss, _ := store.Namespaces(t.Context())
	for _, ref := range refs {
		found := false
		for _, ns := range nss {
			if _, err := store.Stat(t.Context(), ns, ref); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("the request sent names %s, which is not stored", ref)
		}
	}
}

// A request the upstream never answers (its connection refused or cut
// before any answer, no answer headers in time, a client that hung up
// first) was not accepted either: what it stored is removed, as for a
// refusal (issue 49.4: store after the upstream accepts). A proxy whose
// upstream is down or misconfigured no longer keeps the results of every
// request its clients retry.
func TestUnansweredRequestStoresNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		up     http.HandlerFunc
		hangUp bool // the client gives up before the answer
	}{
		{"connection cut before the answer", http.StatusBadGateway, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, false},
		{"no answer headers in time", http.StatusGatewayTimeout, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, false},
		{"the client hung up first", 0, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			us := httptest.NewServer(c.up)
			t.Cleanup(us.Close)
			store := memstore.New()
			e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: pipeline.Options{Store: store, Sessions: memsession.New(), NoCompact: true}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: us.URL, Logger: testLogger(t), UpstreamHeaderTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			t.Cleanup(ps.Close)

			budget := 30 * time.Second
			if c.hangUp {
				budget = 150 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(t.Context(), budget)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ps.URL+"/v1/messages", strings.NewReader(toolBody("anthropic", "toolu_u", 3)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", "k")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			switch {
			case c.hangUp && err == nil:
				resp.Body.Close()
				t.Fatalf("status %d, want the client's own timeout", resp.StatusCode)
			case !c.hangUp && err != nil:
				t.Fatalf("no answer within the client's budget: %v", err)
			case !c.hangUp:
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
				}
			}
			// The exchange ends once the proxy's handler returns.
			deadline := time.Now().Add(3 * time.Second)
			for {
				n := 0
				nss, _ := store.Namespaces(t.Context())
				for _, ns := range nss {
					list, err := store.Query(t.Context(), ns, workspace.Filter{})
					if err != nil {
						t.Fatal(err)
					}
					n += len(list)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d artifacts stored for a request the upstream never answered, want none", n)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
