package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/e2eclient"
	"github.com/agentctx/agentctx/internal/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// TestClaudeCodeThinkingModes runs real Claude Code (signed thinking on
// every turn, one open turn of tool rounds) through the proxy in each
// context-management mode and reports the thinking figures: blocks sent
// by the client and forwarded, blocks the API would judge invalid, and the
// requests that relied on drop_block.
func TestClaudeCodeThinkingModes(t *testing.T) {
	dir := e2eclient.Install(t)
	for _, mode := range []proxy.ContextManagement{proxy.ContextClient, proxy.ContextNative} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel() // each mode has its own upstream, engine, proxy and client
			const turns = 12
			fake := fakeupstream.New(fakeupstream.Options{
				ContextWindow: 36_000,
				Script: e2eScript(turns, func(c *fakeupstream.Call, cmd string) (fakeupstream.ToolCall, bool) {
					return fakeupstream.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run a step"}}, true
				}),
			})
			up := startUpstream(t, fake)
			srv, err := proxy.New(proxy.Options{Engine: e2eEngine(t, up, 22_000, 2_000, "Bash"), AnthropicURL: up, OpenAIURL: up,
				Logger: testLogger(t), ContextManagement: mode})
			if err != nil {
				t.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			defer ps.Close()

			argv := append(e2eclient.ClaudeCommand(dir), "-p", "Run the numbered steps with Bash and report the final RESULT.",
				"--allowedTools", "Bash", "--output-format", "json")
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+ps.URL, "ANTHROPIC_API_KEY=dummy",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				for _, r := range fake.Records() {
					if r.Rejected != "" {
						t.Logf("upstream rejected: %s", r.Rejected)
					}
				}
				t.Fatalf("claude: %v\nstderr: %s", err, e2eclient.Tail(stderr.String()))
			}
			bill := fake.Bill()
			st := srv.Stats()
			if len(st) != 1 {
				t.Fatalf("%d sessions", len(st))
			}
			s := st[0]
			fig, _ := json.Marshal(map[string]any{"mode": mode, "requests": bill.Requests, "rejections": bill.Rejections,
				"drop_block_requests": bill.DropBlockRequests, "invalid_thinking_blocks": bill.InvalidThinking,
				"thinking_sent": s.ThinkingSent, "thinking_forwarded": s.ThinkingForwarded, "native_edits": s.NativeEdits,
				"held_results": s.HeldResults, "deferred_results": s.DeferredResults, "cleared_tool_uses": bill.ClearedToolUses, "compactions": s.Compactions,
				"usd": bill.USD, "input_tokens": bill.InputTotal()})
			t.Logf("figures: %s", fig)
			if bill.Rejections != 0 {
				t.Errorf("%d requests rejected", bill.Rejections)
			}
			if bill.InvalidThinking > 0 && bill.DropBlockRequests == 0 {
				t.Errorf("invalid thinking without drop_block")
			}
			// Issue 23: no thinking block the API judges invalid, drop_block
			// on at most 5% of the requests, in either mode.
			if bill.InvalidThinking != 0 || bill.DropBlockRequests*20 > bill.Requests {
				t.Errorf("%s mode: %d invalid thinking blocks, drop_block on %d of %d requests", mode, bill.InvalidThinking, bill.DropBlockRequests, bill.Requests)
			}
			if mode == proxy.ContextNative {
				// Every block is forwarded unless a compaction summarized
				// the messages that held it (the window filled: clearing
				// would have left too little room to be worth its rewrite).
				if s.Compactions == 0 && s.ThinkingForwarded != s.ThinkingSent || s.ThinkingForwarded > s.ThinkingSent {
					t.Errorf("native mode: %d of %d thinking blocks forwarded, %d compactions", s.ThinkingForwarded, s.ThinkingSent, s.Compactions)
				}
				if s.NativeEdits == 0 || bill.ClearedToolUses == 0 {
					t.Errorf("native mode: no edit delegated (native_edits %d, cleared %d)", s.NativeEdits, bill.ClearedToolUses)
				}
			} else if s.DeferredResults == 0 {
				t.Errorf("client mode: no edit deferred before the open turn's thinking")
			}
		})
	}
}
