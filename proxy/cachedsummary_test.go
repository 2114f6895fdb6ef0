package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// cachedTurns is a Claude Code-like body of n tool rounds: a system
// prompt, and a cache breakpoint on the last block, as the client puts it.
func cachedTurns(n, size int) string {
	msgs := []string{`{"role":"user","content":[{"type":"text","text":"go"}]}`}
	for i := 0; i < n; i++ {
		cc := ""
		if i == n-1 {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"ls"}}]}`, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q%s}]}`, i, strings.Repeat(fmt.Sprintf("line %d of the output\n", i), size/20), cc))
	}
	return `{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"system":[{"type":"text","text":` +
		fmt.Sprintf("%q", strings.Repeat("You are a coding agent. ", 60)) + `,"cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

// The summary request of a compaction is the session's last forwarded
// request with the instruction appended: the provider reads that prefix
// from its cache (issue 22: it was a new, uncached prompt, which cost more
// than Claude Code's own compaction). So it is at the priced trigger,
// below half the threshold, where the engine kept no forwarded body and
// the summary request went whole and uncached.
func TestSummaryRequestReusesTheCache(t *testing.T) {
	for _, trig := range []pipeline.Trigger{pipeline.TriggerThreshold, pipeline.TriggerPriced} {
		t.Run(string(trig), func(t *testing.T) { summaryReusesTheCache(t, trig) })
	}
}

func summaryReusesTheCache(t *testing.T, trig pipeline.Trigger) {
	fake := fakeupstream.New(fakeupstream.Options{Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		if c.Header.Get(proxy.HeaderSummary) != "" {
			return fakeupstream.Reply{Text: compact.SummaryTitle + "\n\n## Goals and key decisions\n- list the files"}
		}
		return fakeupstream.Reply{Text: "ok"}
	}})
	us := httptest.NewServer(fake)
	defer us.Close()
	e := pipelineEngine(t, proxy.PipelineOptions{
		Pipeline:   pipeline.Options{NoPrune: true, Trigger: trig, Compact: compact.Options{Limit: 8000, MaxRetries: -1}, Workspace: workspace.Options{InlineLimit: 100000}},
		Summarizer: proxy.UpstreamSummarizers(proxy.UpstreamSummarizerOptions{AnthropicURL: us.URL}),
	})
	srv, _ := proxy.New(proxy.Options{Engine: e, AnthropicURL: us.URL, Logger: testLogger(t)})
	ps := httptest.NewServer(srv)
	defer ps.Close()
	headers := map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01", "Anthropic-Beta": "context-management-2025-06-27", proxy.HeaderSession: "s1"}
	summaryAt := -1
	for n := 1; n <= 30 && summaryAt < 0; n++ {
		resp := post(t, ps.URL+"/v1/messages", cachedTurns(n, 1500), headers)
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: status %d", n, resp.StatusCode)
		}
		for i, r := range fake.Records() {
			if r.Header.Get(proxy.HeaderSummary) != "" {
				summaryAt = i
			}
		}
	}
	if summaryAt < 1 {
		t.Fatal("no compaction with a summary request")
	}
	recs := fake.Records()
	sum, prev := recs[summaryAt], recs[summaryAt-1]
	if sum.Rejected != "" {
		t.Fatalf("the summary request was rejected: %s", sum.Rejected)
	}
	var s, p struct {
		System   any              `json:"system"`
		Stream   *bool            `json:"stream"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(sum.Body, &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(prev.Body, &p); err != nil {
		t.Fatal(err)
	}
	if s.Stream == nil || *s.Stream || !reflect.DeepEqual(s.System, p.System) || len(s.Messages) != len(p.Messages) {
		t.Fatalf("the summary request is not the last forwarded request: stream %v, %d messages (last forwarded %d)", s.Stream, len(s.Messages), len(p.Messages))
	}
	last := s.Messages[len(s.Messages)-1]["content"].([]any)
	instr := last[len(last)-1].(map[string]any)["text"].(string)
	if !strings.Contains(instr, "Summarize the conversation above") || !strings.Contains(instr, "call no tool") {
		t.Fatalf("the instruction is not last: %.200q", instr)
	}
	s.Messages[len(s.Messages)-1]["content"] = last[:len(last)-1]
	if !reflect.DeepEqual(s.Messages, p.Messages) {
		t.Fatal("the summary request's messages before the instruction differ from the last forwarded request's")
	}
	if !strings.Contains(sum.Header.Get("Anthropic-Beta"), "context-management-2025-06-27") {
		t.Error("the summary request lacks the betas its body was forwarded with")
	}
	// The billing fake read the prefix from the cache: the summary
	// request (no session header) is billed under "".
	bill := fake.Bill().Sessions[""]
	// At the priced trigger the prefix is a few thousand tokens, the
	// instruction the same few hundred: read 5 times what is new.
	least := map[pipeline.Trigger]int{pipeline.TriggerThreshold: 10, pipeline.TriggerPriced: 5}[trig]
	if bill.Requests != 1 || bill.CacheRead == 0 || bill.CacheRead < least*bill.Input {
		t.Fatalf("summary request billed %+v: want its prefix read from the cache", bill)
	}
	t.Logf("summary request: %d read from the cache, %d uncached, %d written", bill.CacheRead, bill.Input, bill.CacheWrite)
}
