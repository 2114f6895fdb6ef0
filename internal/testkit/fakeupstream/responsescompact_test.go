package fakeupstream_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
)

// compactOf posts a standalone compaction and returns its answer.
func compactOf(t *testing.T, url, body string) map[string]any {
	t.Helper()
	status, out := do(t, url, fakeupstream.CompactPath, body)
	if status != 200 {
		t.Fatalf("compact: %d %s", status, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// compactionItem returns the JSON of the compaction item of an output.
func compactionItem(t *testing.T, v map[string]any) string {
	t.Helper()
	out, _ := v["output"].([]any)
	if len(out) == 0 {
		t.Fatalf("no output: %v", v)
	}
	last, _ := out[len(out)-1].(map[string]any)
	if last["type"] != "compaction" {
		t.Fatalf("last output item is %v, want the compaction item", last["type"])
	}
	b, _ := json.Marshal(last)
	return string(b)
}

const toolRound = `{"type":"message","role":"user","content":"run it"},{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"ls\"}"},{"type":"function_call_output","call_id":"c1","output":"a.txt b.txt"}`

func TestResponsesCompactEndpoint(t *testing.T) {
	f := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(f)
	defer srv.Close()
	v := compactOf(t, srv.URL, `{"model":"m","input":[`+toolRound+`]}`)
	if v["object"] != "response.compaction" {
		t.Errorf("object %v", v["object"])
	}
	out := v["output"].([]any)
	if len(out) != 2 || out[0].(map[string]any)["role"] != "user" {
		t.Fatalf("output %v: want the user message, then the compaction item", out)
	}
	item := compactionItem(t, v)
	var it map[string]any
	json.Unmarshal([]byte(item), &it)
	p, ok := fakeupstream.DecodeCompaction(it["encrypted_content"].(string))
	if !ok || p.Items != 3 || len(p.CallIDs) != 1 || p.CallIDs[0] != "c1" || p.SummaryTokens < 64 {
		t.Errorf("payload %+v (%v)", p, ok)
	}
	u := v["usage"].(map[string]any)
	if u["input_tokens"].(float64) <= 0 || u["output_tokens"].(float64) != float64(p.SummaryTokens) {
		t.Errorf("usage %v, want input tokens and the summary's %d output tokens", u, p.SummaryTokens)
	}
	if b := f.Bill(); b.Compactions != 1 || b.Requests != 1 {
		t.Errorf("bill: %d compactions, %d requests", b.Compactions, b.Requests)
	}

	// The item goes back as input, is accepted and billed as its summary
	// tokens, and folds into the next compaction.
	next := `{"model":"m","input":[` + item + `,{"type":"message","role":"user","content":"go on"}]}`
	if status, body := do(t, srv.URL, "/v1/responses", next); status != 200 {
		t.Fatalf("compaction item as input: %d %s", status, body)
	}
	v2 := compactOf(t, srv.URL, next)
	var it2 map[string]any
	json.Unmarshal([]byte(compactionItem(t, v2)), &it2)
	p2, _ := fakeupstream.DecodeCompaction(it2["encrypted_content"].(string))
	if p2.Items != p.Items+1 || len(p2.CallIDs) != 1 {
		t.Errorf("second compaction %+v: want the first's %d items and one more", p2, p.Items)
	}
}

func TestResponsesCompactionRejects(t *testing.T) {
	srv := httptest.NewServer(fakeupstream.New(fakeupstream.Options{}))
	defer srv.Close()
	good := compactionItem(t, compactOf(t, srv.URL, `{"model":"m","input":"hello"}`))
	tampered := strings.Replace(good, "fakecmp1.", "fakecmp1.x", 1)
	for _, tc := range []struct {
		name, path, body string
		status           int
		reason           string
	}{
		{"threshold accepted", "/v1/responses", `{"model":"m","input":"x","context_management":[{"type":"compaction","compact_threshold":1000}]}`, 200, ""},
		{"context_management not a list", "/v1/responses", `{"model":"m","input":"x","context_management":{"type":"compaction"}}`, 400, "expected an array"},
		{"unknown strategy", "/v1/responses", `{"model":"m","input":"x","context_management":[{"type":"clear_tool_uses"}]}`, 400, "Supported values are: 'compaction'"},
		{"type missing", "/v1/responses", `{"model":"m","input":"x","context_management":[{"compact_threshold":10}]}`, 400, "context_management[0].type"},
		{"unknown entry field", "/v1/responses", `{"model":"m","input":"x","context_management":[{"type":"compaction","keep":3}]}`, 400, "Unknown parameter: 'context_management[0].keep'"},
		{"threshold not an integer", "/v1/responses", `{"model":"m","input":"x","context_management":[{"type":"compaction","compact_threshold":"1k"}]}`, 400, "compact_threshold"},
		{"compaction item accepted", "/v1/responses", `{"model":"m","input":[` + good + `]}`, 200, ""},
		{"tampered compaction item", "/v1/responses", `{"model":"m","input":[` + tampered + `]}`, 400, "invalid_encrypted_content"},
		{"foreign compaction item", "/v1/responses", `{"model":"m","input":[{"type":"compaction","encrypted_content":"gAAAA"}]}`, 400, "invalid_encrypted_content"},
		{"compaction item without content", "/v1/responses", `{"model":"m","input":[{"type":"compaction"}]}`, 400, "input[0].encrypted_content"},
		{"compaction item unknown field", "/v1/responses", `{"model":"m","input":[{"type":"compaction","encrypted_content":"x","summary":"y"}]}`, 400, "Unknown parameter: 'input[0].summary'"},
		{"compact without model", fakeupstream.CompactPath, `{"input":"x"}`, 400, "'model'"},
		{"compact without input", fakeupstream.CompactPath, `{"model":"m"}`, 400, "'input'"},
		{"compact unknown parameter", fakeupstream.CompactPath, `{"model":"m","input":"x","stream":true}`, 400, "Unknown parameter: 'stream'"},
		{"compact previous response unknown", fakeupstream.CompactPath, `{"model":"m","previous_response_id":"resp_1"}`, 400, "not found"},
		{"compact orphan output", fakeupstream.CompactPath, `{"model":"m","input":[{"type":"function_call_output","call_id":"c9","output":"x"}]}`, 400, "No tool call found"},
		{"compact tampered item", fakeupstream.CompactPath, `{"model":"m","input":[` + tampered + `]}`, 400, "invalid_encrypted_content"},
	} {
		status, body := do(t, srv.URL, tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: %d %s; want %d containing %q", tc.name, status, body, tc.status, tc.reason)
		}
	}
}

func TestResponsesThresholdCompaction(t *testing.T) {
	f := fakeupstream.New(fakeupstream.Options{})
	srv := httptest.NewServer(f)
	defer srv.Close()
	long := strings.Repeat("word ", 400)
	for _, tc := range []struct {
		name      string
		threshold int
		stream    bool
		compacted bool
	}{
		{"below", 100_000, false, false},
		{"crossed", 200, false, true},
		{"crossed streamed", 200, true, true},
	} {
		body := `{"model":"m","stream":` + map[bool]string{true: "true", false: "false"}[tc.stream] +
			`,"input":[{"type":"message","role":"user","content":"` + long + `"}],"context_management":[{"type":"compaction","compact_threshold":` + itoa(tc.threshold) + `}]}`
		before := f.Bill()
		status, out := do(t, srv.URL, "/v1/responses", body)
		if status != 200 {
			t.Fatalf("%s: %d %s", tc.name, status, out)
		}
		has := strings.Contains(out, `"type":"compaction"`)
		if has != tc.compacted {
			t.Errorf("%s: compaction item in the answer %v, want %v:\n%s", tc.name, has, tc.compacted, out)
		}
		if tc.stream && tc.compacted && !strings.Contains(out, `"item":{"encrypted_content"`) {
			t.Errorf("%s: no output_item event for the compaction item", tc.name)
		}
		after := f.Bill()
		if got := after.Compactions - before.Compactions; got != map[bool]int{true: 1, false: 0}[tc.compacted] {
			t.Errorf("%s: %d compactions billed", tc.name, got)
		}
		if tc.compacted && after.Output-before.Output < 64 {
			t.Errorf("%s: the compaction pass's output (%d tokens) is not billed", tc.name, after.Output-before.Output)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
