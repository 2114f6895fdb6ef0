package fakeupstream_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

func postCM(t *testing.T, url, beta, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Api-Key", "k")
	if beta != "" {
		req.Header.Set("Anthropic-Beta", beta)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// history is a tool loop of n calls of tool "Read" with big results.
func history(n int) string {
	var msgs []string
	msgs = append(msgs, `{"role":"user","content":"go"}`)
	for i := range n {
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Read","input":{}}]}`, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}`, i, strings.Repeat("word ", 2000)))
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

func TestContextEditing(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	edit := `"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1},"keep":{"type":"tool_uses","value":1}}]}`
	body := `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":` + history(4) + `,` + edit + `}`
	if st, m := postCM(t, srv.URL, "", body); st != 400 || !strings.Contains(fmt.Sprint(m), fakeupstream.ContextManagementBeta) {
		t.Errorf("without the beta: %d %v; want a 400 naming it", st, m)
	}
	st, m := postCM(t, srv.URL, fakeupstream.ContextManagementBeta, body)
	if st != 200 {
		t.Fatalf("with the beta: %d %v", st, m)
	}
	applied, _ := m["context_management"].(map[string]any)["applied_edits"].([]any)
	if len(applied) != 1 {
		t.Fatalf("applied_edits = %v", m["context_management"])
	}
	a := applied[0].(map[string]any)
	if a["cleared_tool_uses"] != 3.0 || a["cleared_input_tokens"].(float64) < 5000 {
		t.Errorf("applied edit %v; want 3 tool uses and their tokens cleared", a)
	}
	// Billed as edited: far less than the four results.
	if in := fake.Bill().InputTotal(); in > 4000 {
		t.Errorf("billed %d input tokens; want the edited prompt (one result of ~2,000)", in)
	}
	if fake.Bill().ClearedToolUses != 3 {
		t.Errorf("bill: %+v", fake.Bill().ThinkingTotals)
	}

	// clear_thinking must come first; exclude_tools spares a tool.
	bad := `{"model":"m","thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"x"}],"context_management":{"edits":[{"type":"clear_tool_uses_20250919"},{"type":"clear_thinking_20251015"}]}}`
	if st, _ := postCM(t, srv.URL, fakeupstream.ContextManagementBeta, bad); st != 400 {
		t.Errorf("clear_thinking second: %d; want 400", st)
	}
	excl := strings.Replace(body, `"keep"`, `"exclude_tools":["Read"],"keep"`, 1)
	if _, m := postCM(t, srv.URL, fakeupstream.ContextManagementBeta, excl); m["context_management"] != nil {
		t.Errorf("excluded tool cleared: %v", m["context_management"])
	}
}

func TestDropBlockCountsInvalidThinking(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	body := `{"model":"m","thinking":{"type":"adaptive","block_binding":{"prefix_mismatch_behavior":"drop_block"}},"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"fakesig:00"},{"type":"text","text":"a"}]},{"role":"user","content":"y"},{"role":"assistant","content":[{"type":"thinking","thinking":"u","signature":"EqQB"},{"type":"text","text":"b"}]},{"role":"user","content":"z"}]}`
	if st, m := postCM(t, srv.URL, fakeupstream.ThinkingBindingBeta, body); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	got := fake.Bill().ThinkingTotals
	// The changed block and every later thinking block are invalid.
	if got.ThinkingBlocks != 2 || got.InvalidThinking != 2 || got.DropBlockRequests != 1 {
		t.Errorf("thinking totals %+v; want 2 blocks, 2 invalid, 1 drop_block request", got)
	}
}

// TestWindowAfterContextEditing: with context management, the window
// applies to the prompt after the server's edits, as the model reads it:
// a request over the window that the clearing brings under is accepted;
// the same request without the edit is too long.
func TestWindowAfterContextEditing(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{ContextWindow: 10_000})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	hist := history(8) // about 20,000 tokens by the quarter-of-bytes estimate
	edit := `"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1},"keep":{"type":"tool_uses","value":1}}]}`
	if st, m := postCM(t, srv.URL, fakeupstream.ContextManagementBeta, `{"model":"m","max_tokens":10,"messages":`+hist+`,`+edit+`}`); st != 200 {
		t.Errorf("cleared under the window: %d %v", st, m)
	}
	if st, m := postCM(t, srv.URL, "", `{"model":"m","max_tokens":10,"messages":`+hist+`}`); st != 400 || !strings.Contains(fmt.Sprint(m), "prompt is too long") {
		t.Errorf("without the edit: %d %v; want prompt is too long", st, m)
	}
}
