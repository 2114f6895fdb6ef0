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

// TestCompactionRejections: what the real API rejects in threshold
// compaction (compact_20260112).
func TestCompactionRejections(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	msgs := `[{"role":"user","content":"go"}]`
	withBlock := `[{"role":"assistant","content":[{"type":"compaction","content":"earlier"},{"type":"text","text":"ok"}]},{"role":"user","content":"go"}]`
	cm := func(edit string) string { return `,"context_management":{"edits":[` + edit + `]}` }
	cases := []struct {
		name, beta, msgs, extra, want string
	}{
		{"no beta", "", msgs, cm(`{"type":"compact_20260112"}`), fakeupstream.CompactBeta},
		{"trigger under the minimum", fakeupstream.CompactBeta, msgs, cm(`{"type":"compact_20260112","trigger":{"type":"input_tokens","value":1000}}`), "at least 50000"},
		{"trigger of another type", fakeupstream.CompactBeta, msgs, cm(`{"type":"compact_20260112","trigger":{"type":"tool_uses","value":60000}}`), "input_tokens"},
		{"unknown field", fakeupstream.CompactBeta, msgs, cm(`{"type":"compact_20260112","keep":{"type":"tool_uses","value":3}}`), "Extra inputs"},
		{"pause not a boolean", fakeupstream.CompactBeta, msgs, cm(`{"type":"compact_20260112","pause_after_compaction":"yes"}`), "boolean"},
		{"compaction block without the edit", fakeupstream.CompactBeta, withBlock, "", "require the compact_20260112 edit"},
		{"clearing still needs its own beta", fakeupstream.CompactBeta, msgs, cm(`{"type":"compact_20260112"},{"type":"clear_tool_uses_20250919"}`), fakeupstream.ContextManagementBeta},
		{"accepted", fakeupstream.CompactBeta, withBlock, cm(`{"type":"compact_20260112","pause_after_compaction":false,"instructions":"x"}`), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, m := postCM(t, srv.URL, c.beta, `{"model":"claude-sonnet-4-6","max_tokens":10,"messages":`+c.msgs+c.extra+`}`)
			if c.want == "" {
				if st != 200 {
					t.Errorf("%d %v; want 200", st, m)
				}
				return
			}
			if st != 400 || !strings.Contains(fmt.Sprint(m), c.want) {
				t.Errorf("%d %v; want a 400 with %q", st, m, c.want)
			}
		})
	}
}

// TestThresholdCompaction: over the trigger, the answer starts with a
// compaction block holding the summary (the instructions followed), the
// summary step is billed on the whole prompt and reported in
// usage.iterations, the top-level usage is the message step's; sent back,
// everything before the block is dropped server-side (billed no more),
// and the thinking produced after the block stays valid.
func TestThresholdCompaction(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		return fakeupstream.Reply{Thinking: "next", Text: "ok"}
	}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	edit := `"context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":50000},"instructions":"## Stored originals\n- t0: artifact abc"}]}`
	hist := history(30) // about 60,000 tokens
	body := `{"model":"claude-sonnet-4-6","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":` + hist + `,` + edit + `}`
	st, m := postCM(t, srv.URL, fakeupstream.CompactBeta, body)
	if st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	content, _ := m["content"].([]any)
	if len(content) < 3 || content[0].(map[string]any)["type"] != "compaction" || content[1].(map[string]any)["type"] != "thinking" {
		t.Fatalf("content %v; want compaction, thinking, text", content)
	}
	summary, _ := content[0].(map[string]any)["content"].(string)
	if !strings.Contains(summary, "## Stored originals\n- t0: artifact abc") {
		t.Errorf("summary %q does not keep what the instructions asked", summary)
	}
	usage := m["usage"].(map[string]any)
	its, _ := usage["iterations"].([]any)
	if len(its) != 2 || its[0].(map[string]any)["type"] != "compaction" || its[1].(map[string]any)["type"] != "message" {
		t.Fatalf("iterations %v", usage["iterations"])
	}
	full := its[0].(map[string]any)["input_tokens"].(float64) + its[0].(map[string]any)["cache_creation_input_tokens"].(float64)
	msgIn := usage["input_tokens"].(float64) + usage["cache_creation_input_tokens"].(float64) + usage["cache_read_input_tokens"].(float64)
	if full < 50_000 || msgIn > 1000 {
		t.Errorf("summary step read %v tokens, message step %v: want the whole prompt, then the summary", full, msgIn)
	}
	bill := fake.Bill()
	if bill.Compactions != 1 || bill.InputTotal() < int(full) {
		t.Errorf("bill %+v: want the compaction and its summary step billed", bill.Totals)
	}

	// The answer appended, and a new prompt: accepted, the history before
	// the block no longer billed, the thinking after it valid.
	answer, _ := json.Marshal(map[string]any{"role": "assistant", "content": content})
	next := `{"model":"claude-sonnet-4-6","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":` +
		strings.TrimSuffix(hist, "]") + `,` + string(answer) + `,{"role":"user","content":"more"}],` + edit + `}`
	st, m = postCM(t, srv.URL, fakeupstream.CompactBeta, next)
	if st != 200 {
		t.Fatalf("next: %d %v", st, m)
	}
	u := m["usage"].(map[string]any)
	in := u["input_tokens"].(float64) + u["cache_creation_input_tokens"].(float64) + u["cache_read_input_tokens"].(float64)
	if in > 1000 || u["iterations"] != nil {
		t.Errorf("next: %v input tokens, iterations %v; want only what follows the block, no new compaction", in, u["iterations"])
	}
	if b := fake.Bill(); b.InvalidThinking != 0 || b.Rejections != 0 {
		t.Errorf("bill %+v", b.Totals)
	}

	// pause_after_compaction: the answer is the block alone.
	paused := strings.Replace(body, `"instructions"`, `"pause_after_compaction":true,"instructions"`, 1)
	st, m = postCM(t, srv.URL, fakeupstream.CompactBeta, paused)
	if st != 200 || m["stop_reason"] != "compaction" || len(m["content"].([]any)) != 1 {
		t.Errorf("paused: %d stop %v content %v", st, m["stop_reason"], m["content"])
	}
}

// TestCompactionBeforeOpenTurnThinking: in a tool loop, the answer that
// carried a compaction block is sent back with the block first and its
// thinking second; the rule that the open turn's last assistant message
// starts with thinking counts from after the block.
func TestCompactionBeforeOpenTurnThinking(t *testing.T) {
	calls := 0
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		calls++
		if calls > 1 {
			return fakeupstream.Reply{Thinking: "done", Text: "ok"}
		}
		return fakeupstream.Reply{Thinking: "run it", ToolCalls: []fakeupstream.ToolCall{{Name: "Read", Input: map[string]any{}}}}
	}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	edit := `"context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":50000}}]}`
	hist := strings.TrimSuffix(history(30), "]") + `,{"role":"user","content":"next"}]`
	body := `{"model":"claude-sonnet-4-6","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":` + hist + `,` + edit + `}`
	st, m := postCM(t, srv.URL, fakeupstream.CompactBeta, body)
	if st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	content := m["content"].([]any)
	var id string
	for _, b := range content {
		if bm := b.(map[string]any); bm["type"] == "tool_use" {
			id = bm["id"].(string)
		}
	}
	answer, _ := json.Marshal(map[string]any{"role": "assistant", "content": content})
	next := `{"model":"claude-sonnet-4-6","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":` +
		strings.TrimSuffix(hist, "]") + `,` + string(answer) + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"x"}]}],` + edit + `}`
	if st, m := postCM(t, srv.URL, fakeupstream.CompactBeta, next); st != 200 {
		t.Errorf("the loop after a compaction: %d %v", st, m)
	}
}

// TestThresholdCompactionStreamed: streamed, the compaction block is a
// content_block_start of type compaction then a compaction_delta with the
// summary and the encrypted_content, and the usage carries the iterations.
func TestThresholdCompactionStreamed(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	body := `{"model":"claude-sonnet-4-6","max_tokens":10,"stream":true,"messages":` + history(30) +
		`,"context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":50000}}]}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Anthropic-Beta", fakeupstream.CompactBeta)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	for _, want := range []string{`"content_block":{"content":"","type":"compaction"}`, `"type":"compaction_delta"`, `"encrypted_content":"fakecompact:`, `"iterations":[{`} {
		if !strings.Contains(s, want) {
			t.Errorf("stream lacks %s", want)
		}
	}
}
