package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentctx/agentctx/proxy"
)

// A client that cancels an OpenAI stream mid-way, after the upstream
// started answering, is billed the input the request would have been
// billed, as the Engine counted it (issue 49: cancelled streams' input
// was missing from the cost: OpenAI reports usage only at a stream's
// end); the request stays a client cancel, not an error. gpt-5 and
// gpt-5-codex: $1.25 per million input tokens.
func TestHangUpMidStreamBillsTheInput(t *testing.T) {
	responsesList := hangupAPI{"openai-responses", "/v1/responses", `data: {"type":"response.completed"`, func(text string) string {
		return `{"model":"gpt-5-codex","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"` + text + `"}]}`
	}} // a list of items: the Engine counts it
	for _, api := range []hangupAPI{hangupAPIs[1], responsesList} {
		t.Run(api.name, func(t *testing.T) {
			us := httptest.NewServer(hangupUpstream(t))
			t.Cleanup(us.Close)
			p := &hangupProxy{}
			srv, err := proxy.New(proxy.Options{Engine: pipelineEngine(t, proxy.PipelineOptions{}), AnthropicURL: us.URL, OpenAIURL: us.URL + "/v1",
				Logger: newLockedLogger(&p.logs, &p.mu)})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			t.Cleanup(ps.Close)
			p.srv, p.url = srv, ps.URL
			if err := p.ask(t, api, "s", "mid 20 6000 400 30", "data: "); err != nil {
				t.Fatal(err)
			}
			st := p.stats(t)["s"]
			if got := statuses(st); len(got) != 1 || got[0] != 499 {
				t.Errorf("statuses %v, want [499]", got)
			}
			counted, _ := st["tokens_after"].(float64)
			if counted <= 0 {
				t.Fatalf("the Engine counted %v tokens", st["tokens_after"])
			}
			checkFigures(t, "session", st, map[string]float64{"input_tokens": counted, "cache_read_tokens": 0, "output_tokens": 0,
				"cost_usd": counted * 1.25 / 1e6, "requests": 1, "errors": 0, "client_cancels": 1})
			if f := p.stats(t)["total"]; f["input_tokens"] != counted {
				t.Errorf("total input_tokens %v, want %v", f["input_tokens"], counted)
			}
		})
	}
	// An upstream that never answered bills nothing.
	t.Run("refused", func(t *testing.T) {
		us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		}))
		t.Cleanup(us.Close)
		srv, err := proxy.New(proxy.Options{Engine: pipelineEngine(t, proxy.PipelineOptions{}), OpenAIURL: us.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		ps := httptest.NewServer(srv)
		t.Cleanup(ps.Close)
		resp := post(t, ps.URL+"/v1/chat/completions", hangupAPIs[1].body("x"), map[string]string{"Authorization": "Bearer k", proxy.HeaderSession: "s"})
		resp.Body.Close()
		for _, s := range srv.Stats() {
			if s.CostUSD != 0 || s.InputTokens != 0 {
				t.Errorf("a refused request was billed: %+v", s.Bill)
			}
		}
	})
}
