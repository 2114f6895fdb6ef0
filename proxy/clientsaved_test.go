package proxy_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
)

// Through the proxy, as Claude Code runs: a Bash call's output was saved by
// the client, whose 2 KB preview names the file; a later request Reads that
// file (~60K characters, over the inline limit) and the upstream gets the
// read whole, while a Read of another file as long is offloaded (issue 47,
// item 5: one extra read per run).
func TestReadOfClientSavedFileForwardedWhole(t *testing.T) {
	const saved = "/home/dev/.claude/projects/-work-app/4f1c/tool-results/toolu_01.txt"
	preview := "<persisted-output>\nOutput too large (58.6KB). Full output saved to: " + saved +
		"\n\nPreview (first 2KB):\n" + strings.Repeat("cc -O2 -c ledger.c\n", 100) + "...\n</persisted-output>"
	whole := strings.Repeat("     1\tcc -O2 -c ledger.c: the whole build log\n", 1400)
	call := func(id, name string, input map[string]string) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}
	}
	result := func(id, text string) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text}}}
	}
	first := []any{
		map[string]any{"role": "user", "content": "build it"},
		call("toolu_01", "Bash", map[string]string{"command": "make"}), result("toolu_01", preview),
	}
	second := append(first[:len(first):len(first)],
		call("toolu_02", "Read", map[string]string{"file_path": saved}), result("toolu_02", whole),
		call("toolu_03", "Read", map[string]string{"file_path": "/home/dev/work/app/big.log"}), result("toolu_03", whole))

	e := pipelineEngine(t, proxy.PipelineOptions{Pipeline: pipeline.Options{StoreOnReplace: true}})
	fake := fakeupstream.New(fakeupstream.Options{})
	base := newProxy(t, fake, e)
	for _, msgs := range [][]any{first, second} {
		body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": msgs})
		resp := post(t, base+"/v1/messages", string(body), map[string]string{proxy.HeaderSession: "saved"})
		if data, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	}
	recs := fake.Records()
	if len(recs) != 2 {
		t.Fatalf("%d requests reached the upstream, want 2", len(recs))
	}
	var sent struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(recs[1].Body, &sent); err != nil || len(sent.Messages) != len(second) {
		t.Fatalf("the second request as forwarded: %v, %d messages", err, len(sent.Messages))
	}
	text := func(i int) string {
		var blocks []struct {
			Content string `json:"content"`
		}
		json.Unmarshal(sent.Messages[i].Content, &blocks)
		if len(blocks) == 0 {
			return ""
		}
		return blocks[0].Content
	}
	if got := text(4); got != whole {
		t.Errorf("the Read of the client's saved file was not forwarded whole:\n%.300s", got)
	}
	if got := text(6); !strings.Contains(got, "<knowledge_list>") {
		t.Errorf("a Read of another file as long was not offloaded:\n%.200s", got)
	}
}
