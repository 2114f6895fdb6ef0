package httpguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestListenAddr(t *testing.T) {
	for _, c := range []struct {
		addr, token, want string
		err               bool
	}{
		{":8787", "", "127.0.0.1:8787", false},
		{"127.0.0.1:0", "", "127.0.0.1:0", false},
		{"localhost:1", "", "localhost:1", false},
		{"[::1]:1", "", "[::1]:1", false},
		{"0.0.0.0:8787", "", "", true},
		{"0.0.0.0:8787", "t", "0.0.0.0:8787", false},
		{"192.168.1.5:1", "", "", true},
	} {
		got, err := ListenAddr(c.addr, c.token)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ListenAddr(%q, %q) = %q, %v", c.addr, c.token, got, err)
		}
	}
}

func TestWrap(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	for _, c := range []struct {
		peer, host, token, auth string
		want                    int
	}{
		{"127.0.0.1:50000", "127.0.0.1:8787", "", "", 204},
		{"127.0.0.1:50000", "localhost:8787", "", "", 204},
		{"[::1]:50000", "[::1]:8787", "", "", 204},
		{"[::ffff:127.0.0.1]:50000", "localhost:8787", "", "", 204},
		{"127.0.0.1:50000", "evil.example:8787", "", "", http.StatusMisdirectedRequest}, // DNS rebinding
		{"127.0.0.1:50000", "evil.example:8787", "s3", "", http.StatusForbidden},
		{"127.0.0.1:50000", "evil.example:8787", "s3", "Bearer s3", 204},
		{"127.0.0.1:50000", "127.0.0.1:8787", "s3", "Bearer nope", http.StatusForbidden},
		// Another machine saying Host: localhost (issue 49.2: it was
		// answered), or with no peer address at all.
		{"192.168.1.20:50000", "localhost:8787", "", "", http.StatusForbidden},
		{"192.168.1.20:50000", "127.0.0.1:8787", "", "", http.StatusForbidden},
		{"[2001:db8::1]:50000", "[::1]:8787", "", "", http.StatusForbidden},
		{"", "localhost:8787", "", "", http.StatusForbidden},
		{"192.168.1.20:50000", "localhost:8787", "s3", "Bearer s3", 204},
	} {
		r := httptest.NewRequest(http.MethodGet, "/agentctx/stats", nil)
		r.Host, r.RemoteAddr = c.host, c.peer
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		Wrap(ok, c.token).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("peer %s host %s token %q auth %q: %d, want %d", c.peer, c.host, c.token, c.auth, w.Code, c.want)
		}
	}
}

// A request through a Unix socket comes from this machine: its peer has
// no address.
func TestWrapUnixSocket(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	r := httptest.NewRequest(http.MethodGet, "/agentctx/stats", nil)
	r.Host, r.RemoteAddr = "localhost", "@"
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.UnixAddr{Name: "/tmp/agentctx.sock", Net: "unix"}))
	w := httptest.NewRecorder()
	Wrap(ok, "").ServeHTTP(w, r)
	if w.Code != 204 {
		t.Fatalf("unix socket: %d, want 204", w.Code)
	}
}
