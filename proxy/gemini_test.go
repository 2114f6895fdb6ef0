package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
)

// teeHandler records the body of each answer its handler writes, as
// written, in the order the answers end.
type teeHandler struct {
	h      http.Handler
	mu     sync.Mutex
	bodies [][]byte
}

func (t *teeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tw := &teeWriter{ResponseWriter: w}
	t.h.ServeHTTP(tw, r)
	t.mu.Lock()
	t.bodies = append(t.bodies, tw.buf.Bytes())
	t.mu.Unlock()
}

func (t *teeHandler) last() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bodies[len(t.bodies)-1]
}

type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// syncBuffer is a log's buffer, written by the proxy's handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const geminiKey = "AIza-gemini-test-key-0123"

// geminiPost sends a Gemini request and returns its status and body.
func geminiPost(t *testing.T, url, body string, h map[string]string) (int, []byte) {
	t.Helper()
	resp := post(t, url, body, h)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// A Gemini CLI-like session through the proxy, against the fake upstream
// (which speaks the Gemini API and bills like it): generateContent whole,
// then streamGenerateContent as SSE and as a JSON array, then countTokens;
// and a conversation whose key is in the query. Every request reaches the
// fake as sent and every answer the client as the fake wrote it, byte for
// byte; the proxy bills what the fake billed (stats, the session's,
// /metrics, the ledger), with and without agentctx alike; each
// conversation is one session; the key is in no log line.
func TestGeminiThroughTheProxy(t *testing.T) {
	turn := 0
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		turn++
		if c.Turn < 2 {
			return fakeupstream.Reply{Thinking: "I should look first.", Text: "Let me look.",
				ToolCalls: []fakeupstream.ToolCall{{Name: "run_shell_command", Input: map[string]any{"command": fmt.Sprint("ls step", c.Turn)}}}}
		}
		return fakeupstream.Reply{Thinking: "Done.", Text: strings.Repeat("The answer is 42. ", 12)}
	}})
	tee := &teeHandler{h: fake}
	us := httptest.NewServer(tee)
	defer us.Close()
	var logs syncBuffer
	store := memsession.New()
	ledger, err := session.LedgerOf(store)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Options{Engine: pipelineEngine(t, proxy.PipelineOptions{}), GeminiURL: us.URL,
		AnthropicURL: "http://127.0.0.1:1", OpenAIURL: "http://127.0.0.1:1", Ledger: ledger, Logger: newSlog(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()

	system := `{"parts":[{"text":` + fmt.Sprintf("%q", strings.Repeat("You are Gemini CLI, a careful coding agent. ", 400)) + `}]}`
	tools := `[{"functionDeclarations":[{"name":"run_shell_command","description":"Runs a shell command.","parameters":{"type":"OBJECT","properties":{"command":{"type":"STRING"}}}}]}]`
	contents := []string{`{"role":"user","parts":[{"text":"Run the maintenance task."}]}`}
	body := func() string {
		return `{"contents":[` + strings.Join(contents, ",") + `],"systemInstruction":` + system + `,"tools":` + tools +
			`,"generationConfig":{"temperature":0,"thinkingConfig":{"includeThoughts":true}}}`
	}
	hdr := map[string]string{"X-Goog-Api-Key": geminiKey, "User-Agent": "GeminiCLI/0.61.0 (linux; x64)"}
	const model = "gemini-2.5-flash"
	base := ps.URL + "/v1beta/models/" + model
	// answerOf returns the model content of an answer: the parts of every
	// chunk (an object, SSE data events, or a JSON array of them) joined.
	answerOf := func(data []byte) string {
		var chunks []map[string]any
		switch {
		case bytes.HasPrefix(data, []byte("data: ")):
			for _, ev := range strings.Split(string(data), "\r\n\r\n") {
				if ev = strings.TrimPrefix(ev, "data: "); ev != "" {
					var c map[string]any
					if err := json.Unmarshal([]byte(ev), &c); err != nil {
						t.Fatalf("event %q: %v", ev, err)
					}
					chunks = append(chunks, c)
				}
			}
		case bytes.HasPrefix(data, []byte("[")):
			if err := json.Unmarshal(data, &chunks); err != nil {
				t.Fatalf("array %s: %v", data, err)
			}
		default:
			var c map[string]any
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatalf("answer %s: %v", data, err)
			}
			chunks = append(chunks, c)
		}
		var parts []any
		for _, c := range chunks {
			cand := c["candidates"].([]any)[0].(map[string]any)
			parts = append(parts, cand["content"].(map[string]any)["parts"].([]any)...)
		}
		b, _ := json.Marshal(map[string]any{"role": "model", "parts": parts})
		return string(b)
	}
	sent := 0
	for i, method := range []string{":generateContent", ":streamGenerateContent?alt=sse", ":streamGenerateContent"} {
		b := body()
		status, data := geminiPost(t, base+method, b, hdr)
		if status != http.StatusOK {
			t.Fatalf("request %d (%s): %d: %s", i+1, method, status, data)
		}
		sent++
		if want := tee.last(); !bytes.Equal(data, want) {
			t.Errorf("request %d (%s): the answer is not the fake's, byte for byte:\n got %.300q\nwant %.300q", i+1, method, data, want)
		}
		recs := fake.Records()
		if got := recs[len(recs)-1].Body; string(got) != b {
			t.Errorf("request %d (%s): the fake got another body than sent (%d bytes, %d sent)", i+1, method, len(got), len(b))
		}
		var calls []string
		answer := answerOf(data)
		var m map[string]any
		json.Unmarshal([]byte(answer), &m)
		for _, p := range m["parts"].([]any) {
			if fc, ok := p.(map[string]any)["functionCall"].(map[string]any); ok {
				calls = append(calls, fmt.Sprintf(`{"functionResponse":{"id":%q,"name":%q,"response":{"output":"a.go\nb.go"}}}`, fc["id"], fc["name"]))
			}
		}
		contents = append(contents, answer)
		if len(calls) > 0 {
			contents = append(contents, `{"role":"user","parts":[`+strings.Join(calls, ",")+`]}`)
		} else {
			contents = append(contents, `{"role":"user","parts":[{"text":"Thanks."}]}`)
		}
	}
	// countTokens: forwarded, not billed.
	if status, data := geminiPost(t, ps.URL+"/v1beta/models/"+model+":countTokens", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, hdr); status != 200 || !bytes.Contains(data, []byte("totalTokens")) {
		t.Fatalf("countTokens: %d: %s", status, data)
	}
	// Another conversation, its key in the query, under a path prefix.
	if status, data := geminiPost(t, ps.URL+"/gemini/v1beta/models/gemini-2.5-pro:generateContent?key="+geminiKey,
		`{"contents":[{"role":"user","parts":[{"text":"Say hi."}]}]}`, nil); status != 200 {
		t.Fatalf("key in the query: %d: %s", status, data)
	} else {
		sent++
		if want := tee.last(); !bytes.Equal(data, want) {
			t.Errorf("key in the query: the answer is not the fake's: %s", data)
		}
	}

	bill := fake.Bill()
	if bill.Rejections != 0 || bill.Requests != sent || bill.CacheRead == 0 {
		t.Fatalf("the fake's bill %+v: want %d requests, none rejected, some read from the cache", bill.Totals, sent)
	}
	tot := srv.TotalSinceStart()
	if tot.Requests != sent || tot.InputTokens != bill.Input || tot.CacheReadTokens != bill.CacheRead || tot.CacheWriteTokens != 0 ||
		tot.OutputTokens != bill.Output || math.Abs(tot.CostUSD-bill.USD) > 2e-6 || tot.CostWithoutUSD != tot.CostUSD {
		t.Errorf("the proxy's bill %+v\nthe fake's %+v", tot, bill.Totals)
	}
	stats := srv.Stats()
	if len(stats) != 2 {
		t.Fatalf("%d sessions, want 2 (one per conversation): %+v", len(stats), stats)
	}
	var sessionCost float64
	for _, st := range stats {
		if st.API != proxy.APIGemini || st.Edited != 0 || st.Errors != 0 {
			t.Errorf("session %+v: want the Gemini API, nothing edited, no error", st)
		}
		sessionCost += st.CostUSD
		if st.Requests == 3 && st.LastUsage.Output == 0 {
			t.Errorf("session %s: no last usage", st.Session)
		}
	}
	if math.Abs(sessionCost-tot.CostUSD) > 2e-6 {
		t.Errorf("the sessions' bills sum to $%v, the total is $%v", sessionCost, tot.CostUSD)
	}
	metrics := string(get(t, ps.URL+proxy.MetricsPath, nil))
	for _, want := range []string{`agentctx_requests_total{api="gemini",outcome="unedited"} 4`, `agentctx_cost_usd_total{api="gemini"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	ps.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := ledger.Query(context.Background(), session.LedgerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ledgerCost float64
	for _, e := range entries {
		if e.API != "gemini" || !strings.HasPrefix(e.Model, "gemini-2.5-") || e.CostUSD != e.CostWithoutUSD || e.Edited {
			t.Errorf("ledger entry %+v", e)
		}
		ledgerCost += e.CostUSD
	}
	if len(entries) != sent || math.Abs(ledgerCost-tot.CostUSD) > 2e-6 {
		t.Errorf("%d ledger entries for $%v; want %d, $%v", len(entries), ledgerCost, sent, tot.CostUSD)
	}
	log := logs.String()
	if strings.Contains(log, geminiKey) {
		t.Errorf("the key is in the log:\n%s", log)
	}
	if strings.Count(log, "api=gemini") != sent {
		t.Errorf("want %d log lines of the Gemini API:\n%s", sent, log)
	}
}

// The JSON-array stream is relayed as it comes: the client has the first
// element before the upstream writes the rest (the proxy does not read it
// whole, as it does a JSON answer), and the bill is the last element's.
func TestGeminiArrayStreamRelayedAsItComes(t *testing.T) {
	release := make(chan struct{})
	first := `[{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":1000,"totalTokenCount":1000}}`
	rest := ",\r\n" + `{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":2,"totalTokenCount":1002}}` + "]"
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, rest)
	}))
	defer us.Close()
	srv, err := proxy.New(proxy.Options{GeminiURL: us.URL, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	resp := post(t, ps.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		map[string]string{"X-Goog-Api-Key": geminiKey})
	defer resp.Body.Close()
	got := make([]byte, len(first))
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(resp.Body, got); done <- err }()
	select {
	case err := <-done:
		if err != nil || string(got) != first {
			t.Fatalf("first element: %q, %v", got, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first element did not come before the rest: the stream was buffered")
	}
	close(release)
	tail, _ := io.ReadAll(resp.Body)
	if string(tail) != rest {
		t.Errorf("the rest: %q", tail)
	}
	tot := srv.TotalSinceStart()
	// gemini-2.5-flash: (1000×0.30 + 2×2.50)/1e6.
	if tot.InputTokens != 1000 || tot.OutputTokens != 2 || math.Abs(tot.CostUSD-0.000305) > 1e-9 {
		t.Errorf("bill %+v", tot.Bill)
	}
}

// A Gemini key is in no error nor log line of the proxy's: an upstream
// that cannot be reached is the proxy's 502, without the key (in the
// query or a header).
func TestGeminiKeyNotInErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	var logs syncBuffer
	srv, err := proxy.New(proxy.Options{GeminiURL: dead, Logger: newSlog(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	defer ps.Close()
	for _, tc := range []struct {
		path string
		h    map[string]string
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent?key=" + geminiKey, nil},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", map[string]string{"X-Goog-Api-Key": geminiKey}},
	} {
		status, data := geminiPost(t, ps.URL+tc.path, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, tc.h)
		if status != http.StatusBadGateway || strings.Contains(string(data), geminiKey) {
			t.Errorf("%s: %d: %s", tc.path, status, data)
		}
	}
	if strings.Contains(logs.String(), geminiKey) {
		t.Errorf("the key is in the log:\n%s", logs.String())
	}
}
