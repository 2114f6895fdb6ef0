package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens/anthropic"
)

// server speaks the count_tokens wire format: it checks the request the way
// Anthropic's API does and answers with input_tokens (the byte length of the
// messages, which is enough to prove the round trip).
func server(t *testing.T, failFirst int, status int) (*httptest.Server, *atomic.Int32, *string) {
	t.Helper()
	var calls atomic.Int32
	var lastBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages/count_tokens" {
			http.Error(w, "wrong endpoint "+r.URL.Path, http.StatusNotFound)
			return
		}
		if r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		if int(n) <= failFirst {
			w.Header().Set("retry-after-ms", "1")
			w.WriteHeader(status)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		lastBody = string(body)
		var req struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
			System   json.RawMessage   `json:"system"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Messages) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`)
			return
		}
		n2 := 0
		for _, m := range req.Messages {
			n2 += len(m)
		}
		w.Header().Set("content-type", "application/json")
		json.NewEncoder(w).Encode(map[string]int{"input_tokens": n2 + len(req.System)})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, &lastBody
}

func TestCountMessages(t *testing.T) {
	srv, calls, body := server(t, 0, 0)
	c := anthropic.New(anthropic.Options{APIKey: "test-key", BaseURL: srv.URL, Model: "claude-test"})
	msgs, _ := agentctx.UnmarshalMessages([]byte(`[{"role":"system","content":"be brief"},{"role":"user","content":"hi <b>","timestamp":1},{"role":"assistant","content":[{"type":"text","text":"hello"}],"id":"msg_1","usage":{"input_tokens":3}}]`))
	n, err := c.CountMessages(context.Background(), msgs, agentctx.Content{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-test","messages":[{"role":"user","content":"hi <b>"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}],"system":[{"type":"text","text":"be brief"}]}`
	if *body != want {
		t.Errorf("request body\n got: %s\nwant: %s", *body, want)
	}
	if n != len(`{"role":"user","content":"hi <b>"}`)+len(`{"role":"assistant","content":[{"type":"text","text":"hello"}]}`)+len(`[{"type":"text","text":"be brief"}]`) {
		t.Errorf("count = %d", n)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls", calls.Load())
	}
	if _, err := c.CountText(context.Background(), "plain"); err != nil {
		t.Error(err)
	}
}

func TestRetriesThenSucceeds(t *testing.T) {
	srv, calls, _ := server(t, 2, http.StatusTooManyRequests)
	c := anthropic.New(anthropic.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: 2})
	if _, err := c.CountText(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls, want 3", calls.Load())
	}
}

func TestErrors(t *testing.T) {
	srv, _, _ := server(t, 0, 0)
	bad := anthropic.New(anthropic.Options{APIKey: "wrong", BaseURL: srv.URL, MaxRetries: -1})
	if _, err := bad.CountText(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("bad key: %v", err)
	}
	if strings.Contains(errString(bad.CountText(context.Background(), "x")), "wrong") {
		t.Error("API key appears in the error")
	}
	c := anthropic.New(anthropic.Options{APIKey: "test-key", BaseURL: srv.URL})
	oa, _ := agentctx.UnmarshalMessages([]byte(`[{"role":"tool","tool_call_id":"c","content":"x"}]`))
	if _, err := c.CountMessages(context.Background(), oa, agentctx.Content{}); !errors.Is(err, anthropic.ErrOpenAIShape) {
		t.Errorf("openai shape: %v", err)
	}
	done := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer slow.Close()
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	sc := anthropic.New(anthropic.Options{APIKey: "test-key", BaseURL: slow.URL, MaxRetries: -1})
	if _, err := sc.CountText(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", err)
	}
}

func errString(_ int, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
