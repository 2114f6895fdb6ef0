package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/proxy"
)

// captureTransport answers at once and keeps the body sent upstream.
type captureTransport struct{ body []byte }

func (c *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.body = nil
	if r.Body != nil {
		c.body, _ = io.ReadAll(r.Body)
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// FuzzProxyBody feeds arbitrary bodies to the three editable routes: the
// proxy never panics, forwards what an Engine keeps byte for byte, and
// what an Engine edits as valid JSON.
func FuzzProxyBody(f *testing.F) {
	for _, s := range []string{anthropicBody, chatBody, responsesBody, `{"messages":[]}`, `{"input":"x","store":false}`, `[1,2]`, `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]}]}`} {
		f.Add(s)
	}
	keep := &funcEngine{}
	edit := &funcEngine{prepare: func(req *proxy.Request) []agentctx.Message {
		return agentctx.MapToolResults(req.Document.Messages, func(agentctx.ToolResult) (agentctx.Content, bool) {
			return agentctx.Text("edited"), true
		})
	}}
	// One server per engine for every input (a server per input and
	// route was most of an input's time): an input is served alone.
	type server struct {
		eng *funcEngine
		tr  *captureTransport
		srv *proxy.Server
	}
	var servers []server
	for _, eng := range []*funcEngine{keep, edit} {
		tr := &captureTransport{}
		srv, err := proxy.New(proxy.Options{Engine: eng, Transport: tr})
		if err != nil {
			f.Fatal(err)
		}
		servers = append(servers, server{eng, tr, srv})
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses"} {
			for _, s := range servers {
				eng, tr, srv := s.eng, s.tr, s.srv
				tr.body = nil
				srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
				if eng == keep && !bytes.Equal(tr.body, []byte(body)) {
					t.Fatalf("%s: an unedited body changed:\n got %q\nwant %q", path, tr.body, body)
				}
				if eng == edit && !bytes.Equal(tr.body, []byte(body)) && !jsonValid(tr.body) {
					t.Fatalf("%s: an edited body is not valid JSON: %q", path, tr.body)
				}
			}
		}
	})
}
