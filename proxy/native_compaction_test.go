package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/lib/ctxedit"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// nativeCompactionRun drives one open turn of tool rounds (signed thinking
// on every answer) through a proxy in mode whose engine compacts at 60,000
// tokens. Every fourth result is large enough to be offloaded (an edit
// placed client-side, in a message the next request sends as edited);
// each message of results carries a text block after them, as Claude
// Code's do. The client sends a compaction block back as Claude Code does:
// {"type":"compaction","content":""}, and its breakpoints as Claude Code
// places them. It returns the fake upstream and the proxy.
func nativeCompactionRun(t *testing.T, mode proxy.ContextManagement, rounds int) (*fakeupstream.Server, *proxy.Server) {
	t.Helper()
	step := 0
	fake := fakeupstream.New(fakeupstream.Options{ContextWindow: 200_000, Script: func(c *fakeupstream.Call) fakeupstream.Reply {
		step++
		return fakeupstream.Reply{Thinking: fmt.Sprintf("Round %d next.", step), Text: "Running.",
			ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": fmt.Sprintf("step %d", step)}}}}
	}})
	up := startUpstream(t, fake)
	dir := t.TempDir()
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
		Pipeline: pipeline.Options{
			WorkspaceDir: filepath.Join(dir, "ws"),
			Workspace:    workspace.Options{InlineLimit: 30_000},
			Compact:      compact.Options{Limit: 60_000, Dir: filepath.Join(dir, "archive"), MaxRetries: -1},
		},
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	srv, err := proxy.New(proxy.Options{Engine: e, AnthropicURL: up, Logger: testLogger(t), ContextManagement: mode})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(srv)
	t.Cleanup(ps.Close)

	msgs := []string{`{"role":"user","content":"Run the steps and report."}`}
	for i := 1; i <= rounds; i++ {
		// Breakpoints as Claude Code places them: two in system, one on
		// the last message (moved on every request).
		sent := append([]string(nil), msgs...)
		if last := sent[len(sent)-1]; strings.HasSuffix(last, `"}]}`) {
			sent[len(sent)-1] = strings.TrimSuffix(last, `}]}`) + `,"cache_control":{"type":"ephemeral"}}]}`
		}
		body := `{"model":"claude-sonnet-4-5","max_tokens":1000,"thinking":{"type":"adaptive"},` +
			`"system":[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` + strings.Join(sent, ",") + `]}`
		resp := post(t, ps.URL+"/v1/messages", body, map[string]string{"X-Agentctx-Session": "s1"})
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("round %d: %d %s", i, resp.StatusCode, data)
		}
		var ans struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(data, &ans); err != nil {
			t.Fatal(err)
		}
		var id string
		for _, b := range ans.Content {
			switch b["type"] {
			case "compaction":
				// What Claude Code 2.1.330 sends back.
				delete(b, "encrypted_content")
				b["content"] = ""
			case "tool_use":
				id, _ = b["id"].(string)
			}
		}
		am, _ := json.Marshal(map[string]any{"role": "assistant", "content": ans.Content})
		n := 400
		if i%4 == 0 {
			n = 1000 // offloaded
		}
		out := strings.Repeat(fmt.Sprintf("round %d output line, words words words\n", i), n)
		msgs = append(msgs, string(am), fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s},{"type":"text","text":"<system-reminder>round %d</system-reminder>"}]}`, id, quote(out), i))
	}
	return fake, srv
}

// compactEditOf returns the request's compact_20260112 edit, or nil.
func compactEditOf(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var b struct {
		CM struct {
			Edits []map[string]any `json:"edits"`
		} `json:"context_management"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.CM.Edits {
		if e["type"] == ctxedit.Compact {
			return e
		}
	}
	return nil
}

func TestNativeAnthropicCompaction(t *testing.T) {
	fake, srv := nativeCompactionRun(t, proxy.ContextNative, 26)
	bill := fake.Bill()
	if bill.Rejections != 0 || bill.InvalidThinking != 0 || bill.DropBlockRequests != 0 {
		t.Fatalf("rejections %d, invalid thinking %d, drop_block %d", bill.Rejections, bill.InvalidThinking, bill.DropBlockRequests)
	}
	st := srv.Stats()
	if len(st) != 1 || st[0].ProviderCompactions == 0 || bill.Compactions != st[0].ProviderCompactions {
		t.Fatalf("provider compactions: proxy %+v, fake %d", st, bill.Compactions)
	}
	// The request that asked for the compaction, and the ones after it.
	asked := -1
	var prefix []json.RawMessage
	for i, r := range fake.Records() {
		e := compactEditOf(t, r.Body)
		var b struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(r.Body, &b)
		if asked < 0 {
			if e == nil {
				if strings.Contains(string(r.Body), `"type":"compaction"`) {
					t.Fatalf("request %d: a compaction block before any was asked", i)
				}
				continue
			}
			asked = i
			trig := e["trigger"].(map[string]any)["value"].(float64)
			instr, _ := e["instructions"].(string)
			if trig != ctxedit.MinCompactTrigger || !strings.Contains(instr, "## "+compact.PointersTitle) || !strings.Contains(r.Header.Get("anthropic-beta"), ctxedit.CompactBeta) {
				t.Errorf("request %d asks a compaction with trigger %v, beta %q, instructions:\n%s", i, trig, r.Header.Get("anthropic-beta"), instr)
			}
			if strings.Contains(string(r.Body), compact.SummaryTitle+`\n`) && !strings.Contains(instr, compact.SummaryTitle) {
				t.Errorf("request %d sends agentctx's summary: the provider's compaction should replace it", i)
			}
			prefix = b.Messages
			continue
		}
		// Later: the edit declared, the messages before the block as the
		// compaction request sent them (but for breakpoints), the block
		// restored.
		if e == nil || e["trigger"].(map[string]any)["value"].(float64) != ctxedit.DeclaredTrigger || e["instructions"] != nil {
			t.Errorf("request %d after the compaction declares %v", i, e)
		}
		if len(b.Messages) <= len(prefix) {
			t.Fatalf("request %d: %d messages, the compaction request sent %d", i, len(b.Messages), len(prefix))
		}
		for j := range prefix {
			if string(canonicalJSON(t, prefix[j])) != string(canonicalJSON(t, b.Messages[j])) {
				t.Errorf("request %d: message %d is not as the compaction request sent it", i, j)
				break
			}
		}
		var blk struct {
			Content []map[string]any `json:"content"`
		}
		json.Unmarshal(b.Messages[len(prefix)], &blk)
		c, _ := blk.Content[0]["content"].(string)
		if blk.Content[0]["type"] != "compaction" || !strings.Contains(c, "## "+compact.PointersTitle) || blk.Content[0]["encrypted_content"] == nil {
			t.Errorf("request %d: the compaction block is not restored: %v", i, blk.Content[0])
		}
	}
	t.Logf("compaction asked at request %d of %d; provider compactions %d; tokens before %d; thinking %d/%d", asked, len(fake.Records()), st[0].ProviderCompactions, st[0].TokensBefore, st[0].ThinkingForwarded, st[0].ThinkingSent)
	if asked < 0 || asked == len(fake.Records())-1 {
		t.Fatalf("compaction asked at request %d of %d", asked, len(fake.Records()))
	}
	// The engine counts what the server reads: from the block on.
	if s := st[0]; s.TokensBefore >= ctxedit.MinCompactTrigger || s.ThinkingForwarded != s.ThinkingSent {
		t.Errorf("after the compaction: tokens before %d, thinking %d of %d forwarded", s.TokensBefore, s.ThinkingForwarded, s.ThinkingSent)
	}
}

// canonicalJSON returns raw re-encoded without its cache_control members
// (breakpoints move without changing what was sent).
func canonicalJSON(t *testing.T, raw []byte) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "cache_control")
			for _, y := range x {
				strip(y)
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	strip(v)
	b, _ := json.Marshal(v)
	return b
}
