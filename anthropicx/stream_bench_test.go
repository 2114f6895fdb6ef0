package anthropicx_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/anthropicx"
	"github.com/agentctx/agentctx/pricing"
)

type usageSink struct{ n int }

func (s *usageSink) Observe(context.Context, pricing.Usage) { s.n++ }

// BenchmarkStreamUsage: the middleware's watch of a streamed answer of
// 2,000 text deltas for its usage (a one-message request: the response's
// cost), read in 32 KiB reads.
func BenchmarkStreamUsage(b *testing.B) {
	var s strings.Builder
	s.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":3000,\"output_tokens\":1}}}\n\n")
	for range 2000 {
		s.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"some words of the answer \"}}\n\n")
	}
	s.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	stream := []byte(s.String())
	sink := &usageSink{}
	mw := anthropicx.Middleware(identity{}, anthropicx.Options{Observer: sink})
	next := func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(stream))}, nil
	}
	body := []byte(`{"model":"claude-test","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, "http://api.test/v1/messages", bytes.NewReader(body))
		resp, err := mw(req, next)
		if err != nil {
			b.Fatal(err)
		}
		io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
		resp.Body.Close()
	}
	if sink.n == 0 {
		b.Fatal("no usage observed")
	}
}
