package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// hangingSummaries is an upstream whose summary requests (HeaderSummary:
// the upstream summarizer's, the provider compactions of native mode)
// never answer until their client gives up (or the test ends); every
// other request goes to fake.
func hangingSummaries(t *testing.T, fake http.Handler) string {
	t.Helper()
	release := make(chan struct{})
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(proxy.HeaderSummary) != "" || strings.HasSuffix(r.URL.Path, "/compact") {
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(us.Close)
	t.Cleanup(func() { close(release) }) // before us.Close, which waits for the handlers
	return us.URL
}

// textTurns is a body of api (anthropic, openai-chat, openai-responses)
// with n exchanges of about size characters each, ending on the user's
// turn.
func textTurns(api proxy.API, n, size int) string {
	var msgs []string
	msg := func(role, text string) string {
		if api == proxy.APIResponses {
			kind := "input_text"
			if role == "assistant" {
				kind = "output_text"
			}
			return fmt.Sprintf(`{"type":"message","role":%q,"content":[{"type":%q,"text":%q}]}`, role, kind, text)
		}
		return fmt.Sprintf(`{"role":%q,"content":%q}`, role, text)
	}
	for i := 0; i < n; i++ {
		msgs = append(msgs, msg("user", fmt.Sprintf("request %d: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i), size/6))),
			msg("assistant", fmt.Sprintf("answer %d: %s", i, strings.Repeat(fmt.Sprintf("reply%d ", i), size/7))))
	}
	msgs = append(msgs, msg("user", "and now the next step"))
	switch api {
	case proxy.APIResponses:
		return `{"model":"gpt-5","store":false,"input":[` + strings.Join(msgs, ",") + `]}`
	case proxy.APIChat:
		return `{"model":"gpt-5","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	return `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[` + strings.Join(msgs, ",") + `]}`
}

var apiPaths = map[proxy.API]string{
	proxy.APIAnthropic: "/v1/messages",
	proxy.APIChat:      "/v1/chat/completions",
	proxy.APIResponses: "/v1/responses",
}

// A summary request that hangs past its deadline falls back to the
// extractive summary on a deadline of its own: the request is compacted
// and forwarded under the limit (issue 49.3: the fallback got the expired
// context and returned at once, so the request went upstream over the
// limit, uncompacted). The deadline is the compaction's AttemptTimeout
// (--timeout) or the summarizer's own Timeout; in native mode the
// provider's compaction hangs.
func TestSummaryTimeoutFallsBack(t *testing.T) {
	const limit = 3000
	for _, c := range []struct {
		name    string
		api     proxy.API
		native  bool
		attempt time.Duration // compact.Options.AttemptTimeout
		timeout time.Duration // UpstreamSummarizerOptions.Timeout
	}{
		{"anthropic/attempt-timeout", proxy.APIAnthropic, false, 200 * time.Millisecond, 0},
		{"chat/attempt-timeout", proxy.APIChat, false, 200 * time.Millisecond, 0},
		{"responses/attempt-timeout", proxy.APIResponses, false, 200 * time.Millisecond, 0},
		{"responses-native/attempt-timeout", proxy.APIResponses, true, 200 * time.Millisecond, 0},
		{"anthropic/summary-timeout", proxy.APIAnthropic, false, 0, 200 * time.Millisecond},
		{"chat/summary-timeout", proxy.APIChat, false, 0, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := fakeupstream.New(fakeupstream.Options{})
			up := hangingSummaries(t, fake)
			summ := proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: up, OpenAIURL: up, Timeout: c.timeout})
			mode := proxy.ContextClient
			if c.native {
				summ = proxy.NativeSummarizers(proxy.NativeSummarizerOptions{OpenAIURL: up, Fallback: summ})
				mode = proxy.ContextNative
			}
			dir := t.TempDir()
			e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
				Pipeline: pipeline.Options{
					WorkspaceDir: filepath.Join(dir, "ws"), NoPrune: true, Trigger: pipeline.TriggerThreshold,
					Workspace: workspace.Options{InlineLimit: 100_000},
					Compact:   compact.Options{Limit: limit, Dir: filepath.Join(dir, "archive"), MaxRetries: -1, AttemptTimeout: c.attempt},
				},
				Summarizer: summ,
				Logger:     testLogger(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: up, OpenAIURL: up, Logger: testLogger(t), ContextManagement: mode})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			t.Cleanup(ps.Close)

			// A client with a budget far above the deadlines: a
			// fallback that never comes fails the test, it does not hang it.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ps.URL+apiPaths[c.api], strings.NewReader(textTurns(c.api, 24, 600)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer client-key")
			req.Header.Set("X-Api-Key", "client-key")
			req.Header.Set(proxy.HeaderSession, "s1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("the request did not come back within the client's budget: %v", err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			var sent []fakeupstream.Record
			for _, r := range fake.Records() {
				if r.Header.Get(proxy.HeaderSummary) == "" {
					sent = append(sent, r)
				}
			}
			if len(sent) != 1 {
				t.Fatalf("%d model requests upstream, want 1", len(sent))
			}
			if !strings.Contains(string(sent[0].Body), compact.SummaryTitle) {
				t.Errorf("the request went upstream without a summary (%d bytes)", len(sent[0].Body))
			}
			st := statsOf(t, ps.URL)
			if len(st) != 1 {
				t.Fatalf("%d sessions, want 1", len(st))
			}
			if s := st[0]; s.Compactions != 1 || s.TokensBefore < limit || s.TokensAfter >= limit || s.Errors != 0 {
				t.Errorf("compactions %d, tokens %d → %d, errors %d: want one compaction from over %d tokens to under them, no error",
					s.Compactions, s.TokensBefore, s.TokensAfter, s.Errors, limit)
			}
		})
	}
}

// A client that hangs up while the summary request is in flight is a
// client cancel, not an upstream fault (issue 49: client hang-ups were
// logged as upstream faults, WARN and counted as errors): nothing is
// logged at WARN or above, the request is recorded 499 and is no error,
// and no fallback summary is written for no one.
func TestHangUpDuringSummaryIsAClientCancel(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(proxy.HeaderSummary) != "" {
			io.Copy(io.Discard, r.Body)
			asked <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(us.Close)
	t.Cleanup(func() { close(release) })
	var logs lockedBuffer
	e := pipelineEngine(t, proxy.PipelineOptions{
		Pipeline: pipeline.Options{NoPrune: true, Trigger: pipeline.TriggerThreshold, Workspace: workspace.Options{InlineLimit: 100_000},
			Compact: compact.Options{Limit: 3000, MaxRetries: -1}},
		Summarizer: proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: us.URL, Logger: logs.logger()}),
		Logger:     logs.logger(),
	})
	srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: us.URL, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-asked:
		case <-time.After(30 * time.Second):
		}
		cancel() // the client hangs up while the summary is asked for
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ps.URL+"/v1/messages", strings.NewReader(textTurns(proxy.APIAnthropic, 24, 600)))
	req.Header.Set("X-Api-Key", "client-key")
	req.Header.Set(proxy.HeaderSession, "s1")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("status %d: the client did not hang up", resp.StatusCode)
	}
	var st []proxy.SessionStats
	for deadline := time.Now().Add(10 * time.Second); len(st) == 0 || st[0].Requests == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the proxy did not record the request")
		}
		st = statsOf(t, ps.URL)
	}
	if s := st[0]; s.Errors != 0 || s.ClientCancels != 1 {
		t.Errorf("errors %d, client cancels %d: want 0 and 1", s.Errors, s.ClientCancels)
	}
	for _, r := range fake.Records() {
		t.Errorf("a request went upstream for a client that hung up: %s", r.Path)
	}
	if l := logs.String(); strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || !strings.Contains(l, "status=499") {
		t.Errorf("log:\n%s", l)
	}
}

// lockedBuffer collects the lines of loggers used from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) logger() *slog.Logger { return newLockedLogger(&b.buf, &b.mu) }

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
