package proxy_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/workspace"
)

// A Cline result (a JSON-encoded string) small enough to stay in the
// context is stored as the text it encodes, and the request goes upstream
// byte for byte as the client sent it (issue 47, item 4).
func TestJSONStringResultStoredDecodedSentAsIs(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "line %d \"quoted\" \\ é\n", i)
	}
	text := b.String()
	encoded, _ := json.Marshal(text)
	msgs := []any{
		map[string]any{"role": "user", "content": "build it"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "run_commands", "arguments": `{"commands":["make"]}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": string(encoded)},
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-x", "messages": msgs})
	dir := filepath.Join(t.TempDir(), "ws")
	po := pipeline.Options{WorkspaceDir: dir, NoCompact: true}
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{Pipeline: po, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	up := &capture{}
	base := newProxy(t, up, e)
	if resp := post(t, base+"/v1/chat/completions", string(body), map[string]string{proxy.HeaderSession: "s1"}); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, got := up.last(t); string(got) != string(body) {
		t.Errorf("the upstream got another body:\n got %s\nwant %s", got, body)
	}
	st, err := pipeline.OpenStores(t.Context(), po)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Workspace.Get(t.Context(), workspace.DefaultNamespace, "tool_result_call_1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Content != text || a.Metadata[workspace.KeyEncoding] != workspace.EncodingJSONString {
		t.Errorf("stored %.80q (metadata %v), want the decoded text", a.Content, a.Metadata)
	}
	if back, err := workspace.OriginalContent(a); err != nil || back.AsText() != string(encoded) {
		t.Errorf("OriginalContent = %.80q, %v; want the string as sent", back.AsText(), err)
	}
}
