package proxy_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/prune"
)

// agentctx proxy tells once per session which tools it treats as terminal
// output: the declared tools it knows by name, and each other tool the
// first time its output reads as a shell transcript, however many
// requests the session sends (issue 47, item 3).
func TestProxyLogsTerminalToolsOncePerSession(t *testing.T) {
	var mu sync.Mutex
	var logs strings.Builder
	e, err := proxy.NewPipelineEngine(proxy.PipelineOptions{
		Pipeline: pipeline.Options{WorkspaceDir: filepath.Join(t.TempDir(), "ws"), NoCompact: true, Prune: prune.Options{ByShape: true}},
		Logger:   newLockedLogger(&logs, &mu),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	base := newProxy(t, &capture{}, e)
	tools := `[{"type":"function","function":{"name":"read_file"}},{"type":"function","function":{"name":"run_commands"}},{"type":"function","function":{"name":"my_shell"}}]`
	gemini := "Command: make\nDirectory: (root)\nOutput: built\nError: (none)\nExit Code: 0\nSignal: (none)"
	body := func(first string, calls int) string {
		msgs := []any{map[string]any{"role": "user", "content": first}}
		for i := range calls {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
					"function": map[string]any{"name": "my_shell", "arguments": `{"command":"make"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": gemini})
		}
		b, _ := json.Marshal(map[string]any{"model": "gpt-x", "tools": json.RawMessage(tools), "messages": msgs})
		return string(b)
	}
	for _, session := range []string{"s1", "s2"} {
		for calls := range 3 {
			resp := post(t, base+"/v1/chat/completions", body("build "+session, calls), map[string]string{proxy.HeaderSession: session})
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out := logs.String()
	for s, want := range map[string]int{
		"pipeline: terminal tools":           2,
		"declared=run_commands ":             2,
		"shaped like a shell transcript":     2,
		"treating a tool as terminal":        2,
		"tool=my_shell":                      2,
		"session=s1 tools=terminal-execute,": 1,
	} {
		if got := strings.Count(out, s); got != want {
			t.Errorf("%q logged %d times for 2 sessions of 3 requests, want %d:\n%s", s, got, want, out)
		}
	}
}
