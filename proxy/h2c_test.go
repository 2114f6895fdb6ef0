package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/proxy"
)

// A client that speaks HTTP/2 in the clear (h2c, with prior knowledge)
// is served as HTTP/2, and one that offers an upgrade to it (Upgrade:
// h2c) is answered over HTTP/1.1, the offer ignored as RFC 9113 lets a
// server do: the upstream gets an ordinary request either way (issue 49:
// the preface was forwarded upstream as a request, and the offer answered
// 501).
func TestH2CClients(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	defer us.Close()
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + serveOnLoopback(t, srv)
	body := `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	for _, c := range []struct {
		name   string
		client *http.Client
		header http.Header
		proto  int // the ProtoMajor of the proxy's answer
	}{
		{"prior knowledge", &http.Client{Transport: &http.Transport{Protocols: &h2}}, nil, 2},
		{"upgrade offer", &http.Client{}, http.Header{"Connection": {"Upgrade, HTTP2-Settings"}, "Upgrade": {"h2c"}, "Http2-Settings": {"AAMAAABkAAQCAAAAAAIAAAAA"}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Api-Key", "k")
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.header {
				req.Header[k] = v
			}
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != c.proto || !strings.Contains(string(b), `"ok"`) {
				t.Errorf("%s %d: %s; want HTTP/%d 200 with the upstream's answer", resp.Proto, resp.StatusCode, b, c.proto)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0].Method != http.MethodPost || got[0].URL.Path != "/v1/messages" {
				t.Fatalf("the upstream got %d requests, want the client's one", len(got))
			}
			for _, h := range []string{"Upgrade", "Http2-Settings"} {
				if v := got[0].Header.Get(h); v != "" {
					t.Errorf("the upstream got %s: %q", h, v)
				}
			}
		})
	}
}

// serveOnLoopback runs srv.Serve on a loopback port until the test ends,
// and returns its address.
func serveOnLoopback(t *testing.T, srv *proxy.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}
