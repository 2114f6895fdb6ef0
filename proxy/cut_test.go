package proxy_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/proxy"
)

// A cut upstream answer reaches the client as a transport error, as it
// would directly, for a stream, a chunked body and a body with a length
// (issue 24: the proxy ended its response normally, status 200, and the
// client took the half answer for a whole one).
func TestCutUpstreamAbortsTheClient(t *testing.T) {
	cases := map[string]http.HandlerFunc{
		"sse": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
		"chunked json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"m1","content":[`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
		"content-length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"id":"m1"`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			base := newProxy(t, h, nil)
			resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				return // cut before the headers: an error too
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err == nil {
				t.Fatal("the client read a cut answer to its end without an error")
			}
		})
	}
}

// Trailers of the upstream's answer reach the client.
func TestTrailersRelayed(t *testing.T) {
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Checksum", "abc")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	})
	base := newProxy(t, up, nil)
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.ReadAll(resp.Body)
	if got := resp.Trailer.Get("X-Checksum"); got != "abc" {
		t.Errorf("trailer X-Checksum = %q, want abc", got)
	}
	if got := resp.Trailer.Get("X-Late"); got != "late" {
		t.Errorf("trailer X-Late = %q, want late", got)
	}
}

// An upstream error that echoes the client's key, during a summary, never
// reaches the logs with the key in it (issue 24).
func TestSummaryErrorNeverLogsTheKey(t *testing.T) {
	const key = "sk-ant-api03-SECRETKEY1234567890"
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s"}}`, r.Header.Get("X-Api-Key"))
	})
	var logs strings.Builder
	us := newServer(t, up)
	sum := proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: us, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	req := &proxy.Request{API: proxy.APIAnthropic, Model: "m", Header: http.Header{"X-Api-Key": {key}}}
	_, err := sum(req).Summarize(t.Context(), compact.Request{Messages: []agentctx.Message{agentctx.NewMessage(agentctx.RoleUser, agentctx.Text("hi"))}})
	if err != nil {
		t.Fatal(err) // the extractive fallback answers
	}
	if strings.Contains(logs.String(), "SECRETKEY") || !strings.Contains(logs.String(), "summary failed") {
		t.Fatalf("logs: %s", logs.String())
	}
}

func newServer(t *testing.T, h http.Handler) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// The statistics and MCP endpoints answer only requests addressed to a
// loopback name, or carrying the token when one is set (issue 24: stats
// were unauthenticated with no Host check: DNS rebinding from a browser).
func TestStatsAndMCPAreGuarded(t *testing.T) {
	for _, c := range []struct {
		token, host, auth string
		want              int
	}{
		{"", "", "", 200},
		{"", "attacker.example", "", http.StatusMisdirectedRequest},
		{"s3cret-token", "", "", http.StatusForbidden},
		{"s3cret-token", "attacker.example", "Bearer s3cret-token", 200},
	} {
		us := newServer(t, http.NotFoundHandler())
		srv, err := proxy.New(proxy.Options{AnthropicURL: us, Token: c.token, MCP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})})
		if err != nil {
			t.Fatal(err)
		}
		ps := newServer(t, srv)
		for _, path := range []string{proxy.StatsPath, proxy.MCPPath} {
			req, _ := http.NewRequest(http.MethodGet, ps+path, nil)
			if c.host != "" {
				req.Host = c.host
			}
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s token %q host %q auth %q: status %d, want %d", path, c.token, c.host, c.auth, resp.StatusCode, c.want)
			}
		}
	}
}
