package httpguard

import (
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
		host, token, auth string
		want              int
	}{
		{"127.0.0.1:8787", "", "", 204},
		{"localhost:8787", "", "", 204},
		{"evil.example:8787", "", "", http.StatusMisdirectedRequest}, // DNS rebinding
		{"evil.example:8787", "s3", "", http.StatusForbidden},
		{"evil.example:8787", "s3", "Bearer s3", 204},
		{"127.0.0.1:8787", "s3", "Bearer nope", http.StatusForbidden},
	} {
		r := httptest.NewRequest(http.MethodGet, "/agentctx/stats", nil)
		r.Host = c.host
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		Wrap(ok, c.token).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("host %s token %q auth %q: %d, want %d", c.host, c.token, c.auth, w.Code, c.want)
		}
	}
}
