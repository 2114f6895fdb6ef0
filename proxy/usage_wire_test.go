package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pricing"
	"github.com/agentctx/agentctx/proxy"
)

// TestStreamUsageFraming: the usage of a streamed Anthropic answer is read
// whatever the stream's framing the event-stream format allows: CRLF or CR
// line ends, an event's data over several lines, comments, the last event
// without its empty line. (The old line reader split at LF only and read
// each data line alone: it lost the usage of the CR and multi-line
// streams.)
func TestStreamUsageFraming(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":100,"cache_read_input_tokens":3000,"cache_creation_input_tokens":40,"output_tokens":1}}}`
	delta := `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`
	for _, tc := range []struct{ name, stream string }{
		{"lf", "event: message_start\ndata: " + start + "\n\nevent: message_delta\ndata: " + delta + "\n\n"},
		{"crlf", "event: message_start\r\ndata: " + start + "\r\n\r\n: ping\r\n\r\ndata: " + delta + "\r\n\r\n"},
		{"cr", "event: message_start\rdata: " + start + "\r\rdata: " + delta + "\r\r"},
		{"multi-line data", "data: " + start + "\n\ndata: " + strings.Replace(delta, `,"usage"`, ",\ndata: \"usage\"", 1) + "\n\n"},
		{"no final empty line", "data: " + start + "\n\ndata: " + delta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				// Cut into small writes, flushed: the proxy reads the
				// stream in pieces that split lines and events.
				f := w.(http.Flusher)
				for s := tc.stream; len(s) > 0; {
					n := min(len(s), 13)
					io.WriteString(w, s[:n])
					f.Flush()
					s = s[n:]
				}
			}))
			t.Cleanup(us.Close)
			srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			t.Cleanup(ps.Close)
			resp := post(t, ps.URL+"/v1/messages", `{"model":"claude-sonnet-4-5","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
				map[string]string{"X-Api-Key": "k", proxy.HeaderSession: "s"})
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != tc.stream {
				t.Fatalf("relayed %q", got)
			}
			want := pricing.Usage{Uncached: 100, CacheRead: 3000, CacheWrite5m: 40, Output: 7}
			var last pricing.Usage
			waitFor(t, func() bool {
				s := srv.Stats()
				if len(s) == 1 {
					last = s[0].LastUsage
				}
				return last == want
			})
		})
	}
}
