package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/proxy"
)

// localRequest is httptest.NewRequest from a peer on this machine
// (httptest's own peer, 192.0.2.1, is another machine's).
func localRequest(method, target string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = "127.0.0.1:50000"
	return r
}

// Without a token, the proxy's own endpoints answer requests from this
// machine only: another machine saying Host: localhost gets 403 (issue
// 49.2: stats, /metrics, the dashboard, its read-back and /mcp answered
// it 200, artifacts included). With the token it is served.
func TestOwnEndpointsRefuseAnotherMachine(t *testing.T) {
	readBack := proxy.ReadBack(func(context.Context, string, json.RawMessage) (string, error) {
		return "the artifact's content", nil
	})
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("mcp")) })
	for _, c := range []struct {
		name, peer, token, auth string
		want                    int
	}{
		{"another machine, Host localhost", "192.168.1.20:50000", "", "", http.StatusForbidden},
		{"another machine, IPv6", "[2001:db8::7]:50000", "", "", http.StatusForbidden},
		{"this machine", "127.0.0.1:50000", "", "", http.StatusOK},
		{"another machine with the token", "192.168.1.20:50000", "s3", "Bearer s3", http.StatusOK},
		{"another machine without the token", "192.168.1.20:50000", "s3", "", http.StatusForbidden},
	} {
		srv, err := proxy.New(proxy.Options{Token: c.token, MCP: mcp, ReadBack: readBack})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{proxy.StatsPath, proxy.MetricsPath, proxy.DashboardPath,
			proxy.DashboardReadPath + "?id=tool_result_a", proxy.MCPPath} {
			r := httptest.NewRequest(http.MethodGet, "http://localhost:8787"+path, nil)
			r.RemoteAddr = c.peer
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Errorf("%s: GET %s: %d, want %d: %s", c.name, path, w.Code, c.want, firstLine(w.Body.String()))
			}
			if c.want != http.StatusOK && strings.Contains(w.Body.String(), "the artifact's content") {
				t.Errorf("%s: GET %s served an artifact", c.name, path)
			}
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
