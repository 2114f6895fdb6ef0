package cli_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/pipeline"
)

// toolRun is a conversation of n messages as a JSON array: a user request,
// then Bash calls and their results of about size characters.
func toolRun(n, size int) []string {
	msgs := []string{`{"role":"user","content":"fix the build"}`}
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%02d","name":"Bash","input":{"command":"make step%d"}}]}`, i, i))
		if len(msgs) < n {
			out, _ := json.Marshal(strings.Repeat(fmt.Sprintf("compiling unit %d of step %d ... ok\n", i*7, i), size/40))
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%02d","content":%s}]}`, i, out))
		}
	}
	return msgs
}

// The CLI scenario of issue 24: a 55-message run compacts most of it;
// preparing the first messages it compacted again (a retry, a regenerate)
// sends them, with their last turn, not the summary alone.
func TestPrepareRequestBehindTheSession(t *testing.T) {
	dir := t.TempDir()
	msgs := toolRun(55, 1200)
	args := []string{"prepare", "--limit", "8000", "--workspace", filepath.Join(dir, "ws"), "--dir", filepath.Join(dir, "offload"), "--session", "s1"}
	code, stdout, errOut := runCLI(t, "["+strings.Join(msgs, ",")+"]", args...)
	if code != 0 {
		t.Fatalf("55 messages: exit %d: %s", code, errOut)
	}
	first := prepLines(t, stdout, "messages", "report")[0]
	c := first.Report.Step(pipeline.StepCompact).Compact
	if c == nil || !c.Compacted {
		t.Fatalf("55 messages are not compacted: %+v", first.Report.Steps)
	}
	n := c.Stats.CompactedMessageCount
	t.Logf("55 messages: %d compacted", n)

	code, stdout, errOut = runCLI(t, "["+strings.Join(msgs[:n], ",")+"]", args...)
	if code != 0 {
		t.Fatalf("the first %d: exit %d: %s", n, code, errOut)
	}
	again := prepLines(t, stdout, "messages", "report")[0]
	r := again.Report
	// Its last turn is sent: the tool call or result of message n.
	last, _ := json.Marshal(again.Messages[len(again.Messages)-1])
	id := regexp.MustCompile(`toolu_\d+`).FindString(msgs[n-1])
	if r.MessagesAfter < 2 || !r.Valid || !strings.Contains(string(last), id) {
		t.Errorf("the first %d again: messages_after %d, valid %v, last message %.200s", n, r.MessagesAfter, r.Valid, last)
	}

	// The session still holds the compaction of the 55.
	code, stdout, errOut = runCLI(t, "["+strings.Join(msgs, ",")+"]", args...)
	if code != 0 {
		t.Fatalf("55 again: exit %d: %s", code, errOut)
	}
	third := prepLines(t, stdout, "messages", "report")[0]
	if c3 := third.Report.Step(pipeline.StepCompact).Compact; c3.Reused != n || c3.Compacted {
		t.Errorf("55 again: compact %+v, want the summary of %d reused", c3, n)
	}
}

// prepare exits 1 when what it printed is still over --limit, with the
// reason on one line of stderr and the JSON printed; --allow-over-limit
// exits 0.
func TestPrepareOverTheLimitExitsNonZero(t *testing.T) {
	in := "[" + strings.Join(toolRun(21, 1200), ",") + "]"
	for _, tt := range []struct {
		name   string
		flags  []string
		code   int
		reason string
	}{
		{"compaction off", []string{"--no-compact"}, 1, "compaction is off"},
		{"allowed", []string{"--no-compact", "--allow-over-limit"}, 0, ""},
		{"nothing to summarize", []string{"--tail-ratio", "0.9"}, 1, "over the limit of 1,000: nothing compacted"},
		{"under", []string{"--limit", "100000"}, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, flags := prepDirs(t)
			args := append(append([]string{"prepare", "--limit", "1000", "--offload", "none"}, flags...), tt.flags...)
			code, stdout, errOut := prepRun(t, false, in, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, errOut)
			}
			out := prepLines(t, stdout, "messages", "report")[0]
			if out.Report.MessagesAfter == 0 {
				t.Errorf("no messages printed")
			}
			if tt.code == 0 {
				if strings.Contains(errOut, "agentctx:") {
					t.Errorf("stderr %q", errOut)
				}
				return
			}
			if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.Contains(errOut, "over the limit") ||
				!strings.Contains(errOut, tt.reason) || !strings.Contains(errOut, "--allow-over-limit") {
				t.Errorf("stderr %q, want one line saying why (%s)", errOut, tt.reason)
			}
			// One number style, and the request's count only (issue 48:
			// "is 6047 tokens ... 4,834 tokens reach the trigger").
			if n := regexp.MustCompile(`\b\d{4,}\b`).FindString(errOut); n != "" || strings.Count(errOut, " tokens") != 1 {
				t.Errorf("stderr %q: a number without separators (%q), or more than one count", errOut, n)
			}
		})
	}
	code, help, _ := prepRun(t, false, "", "prepare", "--help")
	if code != 0 || !strings.Contains(help, "--allow-over-limit") || !strings.Contains(help, "exits 1") {
		t.Errorf("prepare --help does not say when it exits 1 over the limit")
	}
}
