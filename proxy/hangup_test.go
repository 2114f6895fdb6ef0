package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// hangupUpstream answers every request with a stream in its API's format
// (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses) whose
// usage and ending the request's last user text states, as
// "MODE INPUT CACHE_READ CACHE_WRITE OUTPUT":
//
//   - whole: the whole answer, then the end of the body;
//   - hold: the whole answer, then the connection held open (until the
//     proxy lets it go), so that a client hanging up after the terminal
//     event always does so before the upstream ends;
//   - mid: the answer's start (its usage so far, a text delta "MIDDLE"),
//     then the connection held open;
//   - cut: the answer's start, then the connection aborted;
//   - cutafter: the whole answer, then the connection aborted instead of
//     ended.
//
// INPUT is uncached input for Anthropic and every input token for OpenAI
// (which counts cached ones inside it); CACHE_WRITE is Anthropic's, with
// the 5-minute lifetime.
func hangupUpstream(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // a browser's /favicon.ico, passed through
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var req struct {
			Input    json.RawMessage `json:"input"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(raw, &req)
		text := ""
		if len(req.Messages) > 0 {
			text = req.Messages[len(req.Messages)-1].Content
		} else if json.Unmarshal(req.Input, &text) != nil {
			var items []struct { // a list of input messages: the last one's
				Content string `json:"content"`
			}
			json.Unmarshal(req.Input, &items)
			if len(items) > 0 {
				text = items[len(items)-1].Content
			}
		}
		var mode string
		var in, read, write, out int
		if _, err := fmt.Sscan(text, &mode, &in, &read, &write, &out); err != nil {
			t.Errorf("upstream: request text %q: %v", text, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		send := func(s string) { io.WriteString(w, s); fl.Flush() }
		hold := func() {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
				t.Error("upstream: the proxy held the upstream connection 10 s after its client hung up")
			}
		}
		var start, rest []string
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			start = []string{
				`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
				`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"MIDDLE"},"finish_reason":null}]}` + "\n\n",
			}
			rest = []string{
				`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
				fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`+"\n\n", in, out, in+out, read),
				"data: [DONE]\n\n",
			}
		case strings.HasSuffix(r.URL.Path, "/responses"):
			start = []string{
				`event: response.created` + "\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"r1","object":"response","status":"in_progress","output":[]}}` + "\n\n",
				`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"m1","output_index":0,"content_index":0,"delta":"MIDDLE"}` + "\n\n",
			}
			rest = []string{
				`event: response.output_text.done` + "\n" + `data: {"type":"response.output_text.done","sequence_number":2,"item_id":"m1","output_index":0,"content_index":0,"text":"MIDDLE"}` + "\n\n",
				fmt.Sprintf(`event: response.completed`+"\n"+`data: {"type":"response.completed","sequence_number":3,"response":{"id":"r1","object":"response","status":"completed","output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"MIDDLE","annotations":[]}]}],"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}}}`+"\n\n", in, read, out, in+out),
			}
		default:
			start = []string{
				fmt.Sprintf(`event: message_start`+"\n"+`data: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":0},"output_tokens":1}}}`+"\n\n", in, read, write, write),
				`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
					`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"MIDDLE"}}` + "\n\n",
			}
			rest = []string{
				`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n",
				fmt.Sprintf(`event: message_delta`+"\n"+`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`+"\n\n", out),
				`event: message_stop` + "\n" + `data: {"type":"message_stop"}` + "\n\n",
			}
		}
		for _, s := range start {
			send(s)
		}
		switch mode {
		case "mid":
			hold()
			return
		case "cut":
			panic(http.ErrAbortHandler)
		}
		for _, s := range rest {
			send(s)
		}
		switch mode {
		case "hold":
			hold()
		case "cutafter":
			panic(http.ErrAbortHandler)
		}
	}
}

// hangupProxy is a proxy (no Engine) in front of hangupUpstream, with its
// log.
type hangupProxy struct {
	srv  *proxy.Server
	url  string
	mu   sync.Mutex
	logs bytes.Buffer
}

func newHangupProxy(t *testing.T, up http.Handler) *hangupProxy {
	t.Helper()
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	p := &hangupProxy{}
	srv, err := proxy.New(proxy.Options{AnthropicURL: us.URL, OpenAIURL: us.URL + "/v1", Logger: newLockedLogger(&p.logs, &p.mu)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	p.srv, p.url = srv, ps.URL
	return p
}

func (p *hangupProxy) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// hangupAPI is how a client of one API asks: the path, the body of a
// request whose last user text is text, and the line of the answer's
// terminal event.
type hangupAPI struct {
	name, path, terminal string
	body                 func(text string) string
}

var hangupAPIs = []hangupAPI{
	{"anthropic", "/v1/messages", `data: {"type":"message_stop"}`, func(text string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`
	}},
	{"openai-chat", "/v1/chat/completions", `data: [DONE]`, func(text string) string {
		return `{"model":"gpt-5","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"` + text + `"}]}`
	}},
	{"openai-responses", "/v1/responses", `data: {"type":"response.completed"`, func(text string) string {
		return `{"model":"gpt-5-codex","stream":true,"input":"` + text + `"}`
	}},
}

// ask sends one request of session and reads its answer as a client that
// hangs up: after the line that starts with stop and the empty line that
// ends its event (the event complete), it closes the connection; with stop "" it reads the
// answer to its end. It returns the error the reading ended with (nil at
// a hang-up), once the proxy has recorded the request.
func (p *hangupProxy) ask(t *testing.T, api hangupAPI, session, text, stop string) error {
	t.Helper()
	return p.send(t, api.path, api.body(text), session, stop)
}

// send is ask with the request's path and body.
func (p *hangupProxy) send(t *testing.T, path, body, session, stop string) error {
	t.Helper()
	before := p.requests(session)
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set(proxy.HeaderSession, session)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", path, resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	var readErr error
	for found := false; ; {
		line, err := br.ReadString('\n')
		if err != nil {
			readErr = err
			if stop != "" {
				t.Fatalf("%s: the answer ended (%v) before %q", path, err, stop)
			}
			break
		}
		found = found || stop != "" && strings.HasPrefix(line, stop)
		if found && strings.TrimRight(line, "\r\n") == "" {
			break // the empty line that ends the stop line's event: hang up
		}
	}
	resp.Body.Close()
	if readErr == io.EOF {
		readErr = nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.requests(session) == before {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the proxy did not record the request", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return readErr
}

// requests is the requests the proxy has recorded of a session.
func (p *hangupProxy) requests(session string) int {
	for _, s := range p.srv.Stats() {
		if s.Session == session {
			return s.Requests
		}
	}
	return 0
}

// stats returns GET /agentctx/stats, each session and the total as JSON
// objects (total under "total").
func (p *hangupProxy) stats(t *testing.T) map[string]map[string]any {
	t.Helper()
	var doc struct {
		Sessions []map[string]any `json:"sessions"`
		Total    map[string]any   `json:"total"`
	}
	if err := json.Unmarshal(get(t, p.url+proxy.StatsPath, nil), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{"total": doc.Total}
	for _, s := range doc.Sessions {
		out[s["session"].(string)] = s
	}
	return out
}

// statuses returns the statuses of a session's timeline.
func statuses(s map[string]any) []int {
	var out []int
	tl, _ := s["timeline"].([]any)
	for _, p := range tl {
		out = append(out, int(p.(map[string]any)["status"].(float64)))
	}
	return out
}

// checkFigures compares a stats object's numbers with want.
func checkFigures(t *testing.T, name string, got map[string]any, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k].(float64)
		if !ok || !near(g, v) {
			t.Errorf("%s: %s = %v, want %v", name, k, got[k], v)
		}
	}
}

// A client that hangs up as soon as it has the terminal event of a whole
// answer (Codex does, at response.completed) leaves a request answered:
// status 200, billed from the stream's usage, no error, whether the
// upstream ended its body first (a race either may win) or held it open
// (the client's hang-up always first; issue 45: the proxy logged 502 "the
// upstream's answer was cut", counted an error and dropped the usage).
// Per million tokens: claude-sonnet-4-5 $3 in, $0.30 read, $3.75 write
// (5m), $15 out; gpt-5 and gpt-5-codex $1.25 in, $0.125 cached, $10 out.
func TestHangUpAfterTheAnswerIsBilled(t *testing.T) {
	for _, c := range []struct {
		api  hangupAPI
		text string
		want map[string]float64
	}{
		// 100×3 + 4000×0.3 + 1000×3.75 + 50×15 = 6000 → $0.006
		{hangupAPIs[0], "%s 100 4000 1000 50", map[string]float64{"cost_usd": 0.006,
			"input_tokens": 100, "cache_read_tokens": 4000, "cache_write_tokens": 1000, "output_tokens": 50}},
		// (2000−1024)×1.25 + 1024×0.125 + 100×10 = 2348 → $0.002348
		{hangupAPIs[1], "%s 2000 1024 0 100", map[string]float64{"cost_usd": 0.002348,
			"input_tokens": 976, "cache_read_tokens": 1024, "cache_write_tokens": 0, "output_tokens": 100}},
		// (3000−2048)×1.25 + 2048×0.125 + 200×10 = 3446 → $0.003446
		{hangupAPIs[2], "%s 3000 2048 0 200", map[string]float64{"cost_usd": 0.003446,
			"input_tokens": 952, "cache_read_tokens": 2048, "cache_write_tokens": 0, "output_tokens": 200}},
	} {
		for _, mode := range []string{"hold", "whole"} {
			t.Run(c.api.name+"/"+mode, func(t *testing.T) {
				p := newHangupProxy(t, hangupUpstream(t))
				if err := p.ask(t, c.api, "s", fmt.Sprintf(c.text, mode), c.api.terminal); err != nil {
					t.Fatal(err)
				}
				st := p.stats(t)["s"]
				if got := statuses(st); len(got) != 1 || got[0] != http.StatusOK {
					t.Errorf("statuses %v, want [200]", got)
				}
				checkFigures(t, "session", st, c.want)
				checkFigures(t, "session", st, map[string]float64{"requests": 1, "errors": 0, "client_cancels": 0})
				if log := p.log(); strings.Contains(log, "was cut") || !strings.Contains(log, "status=200") {
					t.Errorf("log:\n%s", log)
				}
				fams := parseMetrics(t, get(t, p.url+proxy.MetricsPath, nil))
				if n := sumOf(fams, "agentctx_requests_total", map[string]string{"outcome": "error"}); n > 0 {
					t.Errorf("agentctx_requests_total{outcome=error} = %v, want 0", n)
				}
			})
		}
	}
}

// A client that hangs up in the middle of an answer cancelled it: the
// request is logged 499 (client closed request), not counted as an
// error (the upstream did nothing wrong) but as a client cancel, and the
// usage the stream had reported is billed (Anthropic's message_start:
// input, cache and 1 output token; a Responses stream reports nothing
// before response.completed).
func TestHangUpMidStreamIsAClientCancel(t *testing.T) {
	for _, c := range []struct {
		api  hangupAPI
		want map[string]float64
	}{
		// 20×3 + 6000×0.3 + 400×3.75 + 1×15 = 3375 → $0.003375
		{hangupAPIs[0], map[string]float64{"cost_usd": 0.003375,
			"input_tokens": 20, "cache_read_tokens": 6000, "cache_write_tokens": 400, "output_tokens": 1}},
		{hangupAPIs[1], map[string]float64{"cost_usd": 0, "input_tokens": 0, "output_tokens": 0}},
		{hangupAPIs[2], map[string]float64{"cost_usd": 0, "input_tokens": 0, "output_tokens": 0}},
	} {
		t.Run(c.api.name, func(t *testing.T) {
			p := newHangupProxy(t, hangupUpstream(t))
			if err := p.ask(t, c.api, "s", "mid 20 6000 400 30", "data: "); err != nil {
				t.Fatal(err)
			}
			st := p.stats(t)["s"]
			if got := statuses(st); len(got) != 1 || got[0] != 499 {
				t.Errorf("statuses %v, want [499]", got)
			}
			checkFigures(t, "session", st, c.want)
			checkFigures(t, "session", st, map[string]float64{"requests": 1, "errors": 0, "client_cancels": 1})
			if log := p.log(); strings.Contains(log, "was cut") || !strings.Contains(log, "status=499") {
				t.Errorf("log:\n%s", log)
			}
			fams := parseMetrics(t, get(t, p.url+proxy.MetricsPath, nil))
			if n := sumOf(fams, "agentctx_requests_total", map[string]string{"outcome": "error"}); n > 0 {
				t.Errorf("agentctx_requests_total{outcome=error} = %v, want 0", n)
			}
			if n := sumOf(fams, "agentctx_requests_total", map[string]string{"outcome": proxy.OutcomeCancelled}); n != 1 {
				t.Errorf("agentctx_requests_total{outcome=cancelled} = %v, want 1", n)
			}
			if f := fams["agentctx_session_errors_total"]; f != nil {
				t.Errorf("a session without errors has errors in /metrics: %v", f)
			}
		})
	}
}

// An answer the upstream really cut, before its terminal event, while
// the client waits, is still aborted (the hardening rule, issue 24): the
// client reads a transport error, the request is logged 502 "the
// upstream's answer was cut", counted as an error, and not billed. Cut
// after its terminal event, the answer is whole: billed, status 200.
func TestCutUpstreamStillAborted(t *testing.T) {
	for _, api := range hangupAPIs {
		t.Run(api.name, func(t *testing.T) {
			p := newHangupProxy(t, hangupUpstream(t))
			if err := p.ask(t, api, "s", "cut 7000 6000 400 30", ""); err == nil {
				t.Fatal("the client read a cut answer to its end without an error")
			}
			st := p.stats(t)["s"]
			if got := statuses(st); len(got) != 1 || got[0] != http.StatusBadGateway {
				t.Errorf("statuses %v, want [502]", got)
			}
			checkFigures(t, "session", st, map[string]float64{"requests": 1, "errors": 1, "client_cancels": 0, "cost_usd": 0})
			if log := p.log(); !strings.Contains(log, "the upstream's answer was cut") {
				t.Errorf("log:\n%s", log)
			}
			fams := parseMetrics(t, get(t, p.url+proxy.MetricsPath, nil))
			if n := sumOf(fams, "agentctx_requests_total", map[string]string{"outcome": "error"}); n != 1 {
				t.Errorf("agentctx_requests_total{outcome=error} = %v, want 1", n)
			}
			if n := sumOf(fams, "agentctx_session_errors_total", map[string]string{"session": "s"}); n != 1 {
				t.Errorf("agentctx_session_errors_total{session=s} = %v, want 1", n)
			}

			p.ask(t, api, "s", "cutafter 7000 6000 400 30", "")
			st = p.stats(t)["s"]
			if got := statuses(st); len(got) != 2 || got[1] != http.StatusOK {
				t.Errorf("statuses %v, want [502 200]", got)
			}
			checkFigures(t, "session", st, map[string]float64{"requests": 2, "errors": 1})
			if st["cost_usd"].(float64) <= 0 {
				t.Errorf("the whole answer cut after its end was not billed: %v", st)
			}
		})
	}
}

// The bill in the statistics of sessions whose clients and upstream hang
// up in every order, against bills computed by hand (per million tokens:
// claude-sonnet-4-5 $3 in, $0.30 read, $3.75 write (5m), $15 out;
// gpt-5-codex $1.25 in, $0.125 cached, $10 out; OpenAI's input counts the
// cached tokens).
func TestStatsBillOfHangUpsHandComputed(t *testing.T) {
	p := newHangupProxy(t, hangupUpstream(t))
	anthropic, responses := hangupAPIs[0], hangupAPIs[2]
	for _, r := range []struct {
		api        hangupAPI
		session    string
		text, stop string
	}{
		// Read to its end: 100×3 + 4000×0.3 + 1000×3.75 + 50×15 = 6000 → $0.006
		{anthropic, "cc", "whole 100 4000 1000 50", ""},
		// Hung up at message_stop, the upstream's body still open:
		// 10×3 + 5000×0.3 + 200×3.75 + 30×15 = 2730 → $0.00273
		{anthropic, "cc", "hold 10 5000 200 30", anthropic.terminal},
		// Hung up after message_start, its usage billed (1 output token):
		// 20×3 + 6000×0.3 + 400×3.75 + 1×15 = 3375 → $0.003375
		{anthropic, "cc", "mid 20 6000 400 30", "data: "},
		// Cut by the upstream before its end: not billed, an error.
		{anthropic, "cc", "cut 30 7000 500 40", ""},
		// Cut by the upstream after message_stop: whole.
		// 40×3 + 8000×0.3 + 600×3.75 + 60×15 = 5670 → $0.00567
		{anthropic, "cc", "cutafter 40 8000 600 60", ""},
		// Codex hanging up at response.completed, the upstream's body
		// open: (3000−2048)×1.25 + 2048×0.125 + 200×10 = 3446 → $0.003446
		{responses, "codex", "hold 3000 2048 0 200", responses.terminal},
		// ... the upstream ending its body meanwhile (either first):
		// (5000−4096)×1.25 + 4096×0.125 + 300×10 = 4642 → $0.004642
		{responses, "codex", "whole 5000 4096 0 300", responses.terminal},
		// (8000−6144)×1.25 + 6144×0.125 + 150×10 = 4588 → $0.004588
		{responses, "codex", "hold 8000 6144 0 150", responses.terminal},
	} {
		p.ask(t, r.api, r.session, r.text, r.stop) // (the cut answers end with an error)
	}
	st := p.stats(t)
	// cc: 6000 + 2730 + 3375 + 5670 = 17775 → $0.017775
	checkFigures(t, "cc", st["cc"], map[string]float64{"requests": 5, "errors": 1, "client_cancels": 1,
		"cost_usd": 0.017775, "cost_without_usd": 0.017775, "saved_usd": 0,
		"input_tokens": 170, "cache_read_tokens": 23000, "cache_write_tokens": 2200, "output_tokens": 141})
	// codex: 3446 + 4642 + 4588 = 12676 → $0.012676
	checkFigures(t, "codex", st["codex"], map[string]float64{"requests": 3, "errors": 0, "client_cancels": 0,
		"cost_usd": 0.012676, "cost_without_usd": 0.012676, "saved_usd": 0,
		"input_tokens": 3712, "cache_read_tokens": 12288, "cache_write_tokens": 0, "output_tokens": 650})
	// 17775 + 12676 = 30451 → $0.030451
	checkFigures(t, "total", st["total"], map[string]float64{"requests": 8, "cost_usd": 0.030451,
		"input_tokens": 3882, "cache_read_tokens": 35288, "cache_write_tokens": 2200, "output_tokens": 791})
	// Each request's own figure, on the timeline.
	for session, want := range map[string][]float64{"cc": {0.006, 0.00273, 0.003375, 0, 0.00567}, "codex": {0.003446, 0.004642, 0.004588}} {
		tl, _ := st[session]["timeline"].([]any)
		if len(tl) != len(want) {
			t.Fatalf("%s: %d timeline points, want %d", session, len(tl), len(want))
		}
		for i, pt := range tl {
			if got := pt.(map[string]any)["cost_usd"].(float64); !near(got, want[i]) {
				t.Errorf("%s request %d: cost_usd %v, want %v", session, i+1, got, want[i])
			}
		}
	}
	if got := statuses(st["cc"]); fmt.Sprint(got) != "[200 200 499 502 200]" {
		t.Errorf("cc statuses %v, want [200 200 499 502 200]", got)
	}
	if log := p.log(); !strings.Contains(log, "cost_usd=0.00273 ") || !strings.Contains(log, "cost_usd=0.003446 ") {
		t.Errorf("the requests hung up on have no cost on their log line:\n%s", log)
	}
}

// A Codex session against the fake upstream, whose answers are billed by
// its prompt cache: the client hangs up at every response.completed, the
// upstream holding every other body open after it. The proxy's bill is
// the upstream's, to the millionth of a dollar (issue 45: 9 requests of 13
// dropped, $0.0487 against the upstream's $0.1479).
func TestCodexHangUpsBilledAsTheUpstreamBills(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Text: fmt.Sprintf("done with turn %d: %s", c.Turn, strings.Repeat("word ", 40))}
	}})
	var n atomic.Int64
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fake.ServeHTTP(w, r)
		if n.Add(1)%2 == 1 {
			select { // the body held open until the proxy lets it go
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	})
	p := newHangupProxy(t, up)
	var input []any
	const turns = 13
	for i := range turns {
		input = append(input, map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": fmt.Sprintf("turn %d: %s", i, strings.Repeat("context ", 300))}}})
		body, _ := json.Marshal(map[string]any{"model": "gpt-5-codex", "stream": true, "prompt_cache_key": "codex-1", "input": input})
		if err := p.send(t, "/v1/responses", string(body), "codex-1", "event: response.completed"); err != nil {
			t.Fatal(err)
		}
		input = append(input, map[string]any{"type": "message", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": fmt.Sprintf("done with turn %d", i)}}})
	}
	bill := fake.Bill()
	st := p.stats(t)["codex-1"]
	if bill.Requests != turns || bill.CacheRead == 0 {
		t.Fatalf("the fake billed %+v", bill.Totals)
	}
	checkFigures(t, "codex-1", st, map[string]float64{"requests": turns, "errors": 0, "client_cancels": 0,
		"cost_usd": math.Round(bill.USD*1e6) / 1e6, "input_tokens": float64(bill.Input), "cache_read_tokens": float64(bill.CacheRead),
		"output_tokens": float64(bill.Output)})
	if got := statuses(st); strings.Count(fmt.Sprint(got), "200") != turns {
		t.Errorf("statuses %v, want 200 each", got)
	}
}
