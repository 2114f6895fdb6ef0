package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/testkit/e2eclient"
	"github.com/agentctx/agentctx/internal/testkit/fakeupstream"
	"github.com/agentctx/agentctx/proxy"
)

// subagentMark is in every prompt the scripted model gives a subagent.
const subagentMark = "SUBAGENT-TASK"

// firstUserText returns the texts of a request's first message.
func firstUserText(c *fakeupstream.Call) string {
	msgs, _ := c.Body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m, _ := msgs[0].(map[string]any)
	switch content := m["content"].(type) {
	case string:
		return content
	case []any:
		var out []string
		for _, b := range content {
			if bm, ok := b.(map[string]any); ok {
				if s, ok := bm["text"].(string); ok {
					out = append(out, s)
				}
			}
		}
		return strings.Join(out, "\n")
	}
	return ""
}

// Real Claude Code with its subagents (issue 49.1): the scripted model
// runs large Bash steps until the proxy compacts the main conversation,
// then delegates to subagents (the Agent tool, in the foreground), whose
// requests carry the main conversation's X-Claude-Code-Session-Id, and
// runs on. The subagents are conversations of their own: the main
// conversation compacts once, and each subagent's requests are one
// session of their own.
func TestClaudeCodeSubagentsEndToEnd(t *testing.T) {
	t.Parallel() // its own upstream, proxy, home and working directories
	dir := e2eclient.Install(t)
	const delegations = 2
	var mu sync.Mutex
	step, delegated, after := 0, 0, 0
	var toolNames []string
	fake := fakeupstream.New(fakeupstream.Options{
		ContextWindow: 36_000,
		Script: func(c *fakeupstream.Call) fakeupstream.Reply {
			if c.Header.Get(proxy.HeaderSummary) != "" {
				return fakeupstream.Reply{Text: compact.SummaryTitle + "\n\n## Goals and key decisions\n- run the numbered steps, then delegate\n## Current state\n- in progress"}
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(firstUserText(c), subagentMark) {
				// A subagent: one Bash call, then its report.
				if c.Turn == 0 && slices.Contains(c.ToolNames, "Bash") {
					return fakeupstream.Reply{Text: "Looking.", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo sub-found", "description": "look"}}}}
				}
				return fakeupstream.Reply{Text: "SUBAGENT REPORT: sub-found"}
			}
			if !slices.Contains(c.ToolNames, "Bash") {
				return fakeupstream.Reply{Text: "ok"} // a side request
			}
			if toolNames == nil {
				toolNames = c.ToolNames
			}
			agentTool := ""
			for _, n := range []string{"Agent", "Task"} {
				if slices.Contains(c.ToolNames, n) {
					agentTool = n
				}
			}
			compacted := strings.Contains(c.AllText, compact.SummaryTitle)
			switch {
			case !compacted && step < 30:
				step++
				cmd := fmt.Sprintf("seq 1 600 | sed 's/$/ step-%d-padding-padding-padding/'; echo RESULT=%d", step, step)
				return fakeupstream.Reply{Text: fmt.Sprintf("Running step %d. ", step) + strings.Repeat("Plan note for this step. ", 60),
					ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run a step"}}}}
			case compacted && delegated < delegations && agentTool != "":
				delegated++
				return fakeupstream.Reply{Text: fmt.Sprintf("Delegating part %d.", delegated), ToolCalls: []fakeupstream.ToolCall{{Name: agentTool, Input: map[string]any{
					"description": fmt.Sprintf("Search part %d", delegated), "subagent_type": "general-purpose", "run_in_background": false,
					"prompt": fmt.Sprintf("%s %d: run `echo sub-found` with Bash and report what it printed.", subagentMark, delegated)}}}}
			case compacted && after < 1:
				after++
				return fakeupstream.Reply{Text: "One more check.", ToolCalls: []fakeupstream.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo RESULT=4242", "description": "check"}}}}
			}
			return fakeupstream.Reply{Text: "FINAL ANSWER done"}
		},
	})
	up := startUpstream(t, fake)
	srv, base := startProxy(t, up, e2eEngine(t, up, 22_000, 2_000, "Bash"))

	home, work := t.TempDir(), t.TempDir()
	argv := append(e2eclient.ClaudeCommand(dir), "-p", "Run the numbered steps with Bash, then delegate the searches to subagents.",
		"--allowedTools", "Bash", "Agent", "Task", "--output-format", "json")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Env = append(e2eclient.MinimalEnv(), "HOME="+home, "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, e2eclient.Tail(stdout.String()), e2eclient.Tail(stderr.String()))
	}
	var res struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(e2eclient.LastJSONLine(stdout.Bytes()), &res); err != nil {
		t.Fatalf("claude output is not JSON: %v\n%s", err, e2eclient.Tail(stdout.String()))
	}
	mu.Lock()
	t.Logf("tools %v; %d steps, %d delegations", toolNames, step, delegated)
	mu.Unlock()
	if res.IsError || !strings.Contains(res.Result, "FINAL ANSWER") {
		t.Errorf("claude result = %q (is_error %v)", res.Result, res.IsError)
	}
	summaries := 0
	mainSession := ""
	for _, r := range fake.Records() {
		if r.Rejected != "" {
			t.Errorf("the upstream rejected a request: %s", r.Rejected)
		}
		if r.Header.Get(proxy.HeaderSummary) != "" {
			summaries++
		} else if mainSession == "" {
			mainSession = r.Header.Get("X-Claude-Code-Session-Id")
		}
	}
	if delegated != delegations {
		t.Fatalf("%d delegations, want %d", delegated, delegations)
	}
	if summaries != 1 {
		t.Errorf("%d summary requests, want 1: the main conversation compacts once", summaries)
	}
	// The main conversation keeps Claude Code's session id; each
	// subagent is a session of its own under it.
	own := 0
	for _, st := range srv.Stats() {
		t.Logf("session %s: %d requests, %d compactions", st.Session, st.Requests, st.Compactions)
		switch {
		case st.Session == mainSession && st.Compactions != 1:
			t.Errorf("the main conversation's session %s compacted %d times, want once", st.Session, st.Compactions)
		case strings.HasPrefix(st.Session, mainSession+"-c"):
			own++
		}
	}
	if mainSession == "" || own < delegations {
		t.Errorf("%d sessions under %q besides the main conversation's, want one per subagent (%d)", own, mainSession, delegations)
	}
}
