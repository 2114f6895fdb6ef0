package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/proxy"
)

// The request the upstream receives: the client's headers less the
// hop-by-hop ones (those the Connection header names too), Te and the
// client's Accept-Encoding; the client's forwarding headers as they came
// (none added); the upstream's host; the query; the body's length. The
// answer the client receives: the upstream's headers less the hop-by-hop
// ones. (Pinned before and after the proxy moved to
// httputil.ReverseProxy.)
func TestForwardedHeaders(t *testing.T) {
	var got *http.Request
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(r.Context())
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Upstream", "u")
		w.Header().Set("Proxy-Authenticate", "Basic")
		io.WriteString(w, `{"id":"m1","type":"message","content":[],"usage":{"input_tokens":3,"output_tokens":1}}`)
	})
	us := httptest.NewServer(up)
	defer us.Close()
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, OpenAIURL: us.URL + "/v1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()

	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	raw := "POST /v1/messages?beta=true HTTP/1.1\r\n" +
		"Host: " + strings.TrimPrefix(ps.URL, "http://") + "\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Connection: keep-alive, X-Drop-Me\r\n" +
		"X-Drop-Me: 1\r\n" +
		"Keep-Alive: timeout=5\r\n" +
		"Proxy-Authorization: Basic c2VjcmV0\r\n" +
		"Te: trailers\r\n" +
		"Accept-Encoding: br\r\n" +
		"X-Forwarded-For: 10.0.0.1\r\n" +
		"X-Forwarded-Proto: https\r\n" +
		"X-Api-Key: k\r\n" +
		"\r\n" + body
	c, err := net.Dial("tcp", strings.TrimPrefix(ps.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if got == nil {
		t.Fatal("the upstream received nothing")
	}

	if got.Host != strings.TrimPrefix(us.URL, "http://") || got.URL.Path != "/v1/messages" || got.URL.RawQuery != "beta=true" {
		t.Errorf("upstream request: host %q path %q query %q", got.Host, got.URL.Path, got.URL.RawQuery)
	}
	if got.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d, want %d", got.ContentLength, len(body))
	}
	for _, k := range []string{"X-Drop-Me", "Keep-Alive", "Proxy-Authorization", "Te", "Forwarded", "X-Forwarded-Host"} {
		if v, ok := got.Header[k]; ok {
			t.Errorf("upstream received %s: %q", k, v)
		}
	}
	want := map[string][]string{
		"X-Forwarded-For":   {"10.0.0.1"},
		"X-Forwarded-Proto": {"https"},
		"X-Api-Key":         {"k"},
		"Content-Type":      {"application/json"},
		"Accept-Encoding":   {"gzip"}, // the transport's, not the client's
		"User-Agent":        {"Go-http-client/1.1"},
	}
	for k, v := range want {
		if !slices.Equal(got.Header[k], v) {
			t.Errorf("upstream %s = %q, want %q", k, got.Header[k], v)
		}
	}
	if v := got.Header.Get("Connection"); v != "" {
		t.Errorf("upstream Connection = %q", v)
	}

	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Upstream") != "u" {
		t.Errorf("answer: %d %v", resp.StatusCode, resp.Header)
	}
	for _, k := range []string{"Keep-Alive", "Proxy-Authenticate"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("client received %s: %q", k, v)
		}
	}
}

// An upstream that cannot be reached: 502 with the error, as the proxy
// wrote it before it moved to httputil.ReverseProxy.
func TestUnreachableUpstream502(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	srv, err := proxy.New(proxy.Options{AnthropicURL: "http://" + addr, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	resp, err := http.Post(ps.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const prefix = `{"type":"error","error":{"type":"proxy_error","message":"agentctx proxy: upstream: Post: dial tcp ` // then the address and the OS's error
	if resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(string(b), prefix) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// The upstream receives the path as the client escaped it: an encoded
// slash stays encoded, so /v1/..%2f..%2fx never reaches it as
// /v1/../../x (issue 49).
func TestForwardedPathAsEscaped(t *testing.T) {
	uris := make(chan string, 1)
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uris <- r.RequestURI
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer us.Close()
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL + "/base", OpenAIURL: us.URL + "/v1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	tests := []struct {
		name, method, path, want string
	}{
		{"encoded dot-dot slashes", "GET", "/v1/..%2f..%2fx", "/base/v1/..%2f..%2fx"},
		{"encoded dot-dot slashes, upper case", "GET", "/v1/..%2F..%2Fsecret?q=1", "/base/v1/..%2F..%2Fsecret?q=1"},
		{"encoded slash in a name", "GET", "/v1/files/a%2Fb", "/base/v1/files/a%2Fb"},
		{"a prefix before /v1/", "GET", "/anthropic/v1/models/m%2F1", "/base/v1/models/m%2F1"},
		{"plain", "GET", "/v1/models", "/base/v1/models"},
		{"openai", "GET", "/v1/responses/resp_1%2F..%2F2", "/v1/responses/resp_1%2F..%2F2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(ps.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Written by hand: a client library would clean the path.
			io.WriteString(c, tt.method+" "+tt.path+" HTTP/1.1\r\nHost: "+strings.TrimPrefix(ps.URL, "http://")+"\r\nX-Api-Key: k\r\nConnection: close\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			select {
			case got := <-uris:
				if got != tt.want {
					t.Errorf("upstream got %q, want %q", got, tt.want)
				}
			default:
				t.Fatalf("the upstream received nothing (answer %d)", resp.StatusCode)
			}
		})
	}
}

// A body the proxy forwards as it comes (a path of no API it edits, or
// one over MaxBody) and the answer are relayed at once, both ways: the
// upstream may answer before it has the whole body. Before, the proxy's
// first write of the answer made net/http discard and close what was
// left of the client's body, so the transport, still sending it, failed
// and closed the upstream connection: the answer was cut at its first
// event, or the proxy hung reading a body the client sends only after
// the answer's start (seen as a flaky TestUpstreamTimeouts under load).
func TestForwardedBodyFullDuplex(t *testing.T) {
	// The client sends first bytes, then the rest once the answer
	// started; the upstream answers once it has read some of the first
	// (the transport's buffer holds the last of them).
	const first, rest, some = 64 << 10, 300, 16 << 10
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex() // it answers while it reads
		if _, err := io.ReadFull(r.Body, make([]byte, some)); err != nil {
			t.Errorf("upstream: the body's start: %v", err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: ping\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		n, err := io.Copy(io.Discard, r.Body)
		io.WriteString(w, "event: message_stop\ndata: {\"rest\":"+strconv.FormatInt(n, 10)+"}\n\n")
		if err != nil {
			t.Errorf("upstream: the body's rest: %v", err)
		}
	}))
	defer us.Close()
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, MaxBody: 100, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	addr := strings.TrimPrefix(ps.URL, "http://")
	for _, path := range []string{"/v1/other", "/v1/messages"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second)) // a hang fails, it does not block
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nX-Api-Key: k\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				path, addr, first+rest, strings.Repeat("a", first))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer before the body's end: %v", err)
			}
			io.WriteString(conn, strings.Repeat("b", rest))
			body, err := io.ReadAll(resp.Body)
			if err != nil || !strings.Contains(string(body), `"rest":`+strconv.Itoa(first+rest-some)) {
				t.Errorf("answer %q (%v), want the upstream's end with the body's rest", body, err)
			}
		})
	}
}
