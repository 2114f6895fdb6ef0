package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/proxy"
)

// timeoutUpstream answers as the request's path says: /hang sends
// nothing, /stall sends a stream's first event then nothing, /slow sends
// a stream of 60 events 25 ms apart (1.5 s in all), /json answers at
// once. It never waits past release or its client's hang-up.
func timeoutUpstream(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		wait := func(d time.Duration) bool {
			tm := time.NewTimer(d)
			defer tm.Stop()
			select {
			case <-r.Context().Done():
				return false
			case <-release:
				return false
			case <-tm.C:
				return true
			}
		}
		send := func(s string) { io.WriteString(w, s); w.(http.Flusher).Flush() }
		switch {
		case strings.HasSuffix(r.URL.Path, "/hang"):
			wait(time.Hour)
		case strings.HasSuffix(r.URL.Path, "/stall"):
			w.Header().Set("Content-Type", "text/event-stream")
			send("event: message_start\ndata: {}\n\n")
			wait(time.Hour)
		case strings.HasSuffix(r.URL.Path, "/slow"):
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 60; i++ {
				send(fmt.Sprintf("event: ping\ndata: {\"n\":%d}\n\n", i))
				if !wait(25 * time.Millisecond) {
					return
				}
			}
			send("event: message_stop\ndata: {}\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(us.Close)
	t.Cleanup(func() { close(release) })
	return us.URL
}

// A hung upstream costs a request its upstream timeouts, not the
// client's patience (issue 49: a hung upstream held a request 100 s): no
// answer headers in time is a 504; an answer that stops coming is cut
// (the client reads an error, not a complete-looking answer); a stream
// that keeps coming is never cut, however much longer than the timeouts
// it runs.
func TestUpstreamTimeouts(t *testing.T) {
	up := timeoutUpstream(t)
	var mu sync.Mutex
	var logs strings.Builder
	srv, err := proxy.New(proxy.Options{AnthropicURL: up, UpstreamHeaderTimeout: 300 * time.Millisecond,
		UpstreamIdleTimeout: time.Second, Logger: newLockedLogger(&logs, &mu)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the proxy's log:\n%s", logs.String())
		}
	})
	for _, c := range []struct {
		path       string
		status     int
		cut        bool   // the client's read of the body fails
		wantInBody string // when not cut
	}{
		{"/v1/hang", http.StatusGatewayTimeout, false, "no answer headers within 300ms"},
		{"/v1/stall", http.StatusOK, true, ""},
		{"/v1/slow", http.StatusOK, false, "message_stop"},
		{"/v1/json", http.StatusOK, false, `{"ok":true}`},
	} {
		t.Run(strings.TrimPrefix(c.path, "/v1/"), func(t *testing.T) {
			// A budget far above the timeouts: a bound that does not
			// hold fails the test, it does not hang it.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ps.URL+c.path, strings.NewReader(`{}`))
			req.Header.Set("X-Api-Key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer within the client's budget: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if ctx.Err() != nil {
				t.Fatalf("the answer took the client's whole budget")
			}
			if got := err != nil; got != c.cut {
				t.Errorf("read error %v, want one: %v", err, c.cut)
			}
			if !c.cut && !strings.Contains(string(body), c.wantInBody) {
				t.Errorf("body %q, want %q in it", body, c.wantInBody)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "nothing of the answer for 1s") {
		t.Errorf("the stalled answer's cut is not logged with its timeout:\n%s", logs.String())
	}
}

// A request body that does not come is answered 408 after the body
// timeout (issue 49: slow bodies were held without limit), and the
// deadline on the body never cuts the answer that follows, however long.
func TestClientBodyTimeout(t *testing.T) {
	up := timeoutUpstream(t)
	srv, err := proxy.New(proxy.Options{AnthropicURL: up, ClientBodyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	addr := strings.TrimPrefix(ps.URL, "http://")
	for _, c := range []struct {
		name, path, body string
		length           int
		status           string
		wantInBody       string
	}{
		{"stalled edited body", "/v1/messages", `{"model":`, 1000, "408", "reading the request body"},
		{"stalled forwarded body", "/v1/other", `{"a":`, 1000, "408", "reading the request body"},
		{"whole body, long answer", "/v1/slow", `{}`, 2, "200", "message_stop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second)) // far above the timeout
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nX-Api-Key: k\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", c.path, addr, c.length, c.body)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case fmt.Sprint(resp.StatusCode) != c.status:
				t.Errorf("status %d, want %s: %s", resp.StatusCode, c.status, body)
			case !strings.Contains(string(body), c.wantInBody):
				t.Errorf("body %q, want %q in it", body, c.wantInBody)
			}
		})
	}
}

// Serve closes a kept-alive connection idle past ClientIdleTimeout, and
// one whose headers do not come within ClientHeaderTimeout (issue 49:
// idle keep-alives were held without limit).
func TestServeClosesIdleConnections(t *testing.T) {
	up := timeoutUpstream(t)
	srv, err := proxy.New(proxy.Options{AnthropicURL: up, ClientIdleTimeout: 300 * time.Millisecond, ClientHeaderTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveOnLoopback(t, srv)
	for _, c := range []struct {
		name, send string
		answered   bool
	}{
		{"idle after a request", "POST /v1/json HTTP/1.1\r\nHost: x\r\nX-Api-Key: k\r\nContent-Length: 2\r\n\r\n{}", true},
		{"headers never end", "POST /v1/json HTTP/1.1\r\nHost: x\r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second)) // far above the timeouts
			io.WriteString(conn, c.send)
			br := bufio.NewReader(conn)
			if c.answered {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			// The server closes the connection: the read ends (EOF, or
			// a 408 for headers cut short) before the test's deadline.
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("the connection was held open: %v (read %q)", err, rest)
			}
		})
	}
}
