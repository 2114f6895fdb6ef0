package proxy_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// TestChatStreamUsageSplitsCachedTokens: a streamed chat answer's usage
// counts its cached tokens inside prompt_tokens; the proxy bills them as
// cache reads and only the rest as input, as the upstream (the fake, with
// its prompt-cache model) bills them.
func TestChatStreamUsageSplitsCachedTokens(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	us := httptest.NewServer(fake)
	t.Cleanup(us.Close)
	srv, err := proxy.New(proxy.Options{OpenAIURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	system := strings.Repeat("hello ", 1500) // a prefix of 1,024 tokens and more is cached
	for _, q := range []string{``, `,{"role":"assistant","content":"hello"},{"role":"user","content":"second question"}`} {
		body := `{"model":"gpt-5","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"first"}` + q + `]}`
		resp := post(t, ps.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer k", proxy.HeaderSession: "chat"})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	bill := fake.Bill()
	if bill.CacheRead == 0 {
		t.Fatalf("the fake read nothing from its cache: %+v", bill.Totals)
	}
	var st proxy.SessionStats
	waitFor(t, func() bool {
		s := srv.Stats()
		if len(s) == 1 && s[0].Requests == 2 {
			st = s[0]
		}
		return st.Requests == 2 && st.OutputTokens == bill.Output
	})
	if st.InputTokens != bill.Input || st.CacheReadTokens != bill.CacheRead {
		t.Errorf("proxy billed %d input, %d cache read; the upstream %d input, %d cache read", st.InputTokens, st.CacheReadTokens, bill.Input, bill.CacheRead)
	}
}
