package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
)

// managedTranscript is the Claude Code transcript of session sid that ran
// through agentctx: its second tool result is the reference agentctx sent
// in its place, and its usage is that of the edited requests.
func managedTranscript(t *testing.T, sid string) string {
	t.Helper()
	ts := func(s int) string { return time.Date(2026, 1, 2, 10, 0, s, 0, time.UTC).Format(time.RFC3339) }
	rec := func(i int, typ, msg string) string {
		return `{"type":"` + typ + `","sessionId":"` + sid + `","cwd":"/p","uuid":"u` + string(rune('a'+i)) + `","timestamp":"` + ts(i) + `","message":` + msg + "}\n"
	}
	usage := `"usage":{"input_tokens":900,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":20}`
	ref := `<knowledge_list>\n<knowledge id=\"tool_result_t1\">ls output (40 lines)</knowledge>\n</knowledge_list>`
	s := rec(0, "user", `{"role":"user","content":"list the files"}`) +
		rec(1, "assistant", `{"role":"assistant","id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],`+usage+`}`) +
		rec(2, "user", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"`+ref+`"}]}`) +
		rec(3, "assistant", `{"role":"assistant","id":"m2","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done"}],`+usage+`}`)
	p := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestManagedSessionWithoutLedger: report and replay of a transcript that
// carries agentctx's marks, with no ledger holding it, say in one line on
// stderr (and in the table, in replay's managed.warning) that their
// figures are not the session's; the exit code stays 0 (issue 48.2).
func TestManagedSessionWithoutLedger(t *testing.T) {
	file := managedTranscript(t, "cc-managed-1")
	empty := filepath.Join(t.TempDir(), "ws") // a ledger that is not there
	withEmpty := filepath.Join(t.TempDir(), "ws2")
	if err := os.Mkdir(withEmpty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, ledger, held string
	}{
		{"no ledger", empty, "no ledger was found"},
		{"a ledger without the session", withEmpty, `the ledger holds no entry of session "cc-managed-1"`},
		{"the project's workspace, not there", "", "no ledger was found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ledger []string
			if tt.ledger != "" {
				ledger = []string{"--ledger", tt.ledger}
			} else { // the default: the project's workspace, in an empty state directory
				t.Chdir(t.TempDir())
				t.Setenv("XDG_STATE_HOME", t.TempDir())
			}
			out, errs, code := run(t, "", append([]string{"report", "--limit", "20000", file}, ledger...)...)
			if code != 0 {
				t.Fatalf("report: exit %d: %s", code, errs)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "agentctx report: warning: this session ran through agentctx (1 reference)") ||
				!strings.Contains(errs, tt.held) || !strings.Contains(errs, "not what the session did or billed") {
				t.Errorf("report stderr = %q, want one warning line", errs)
			}
			if !strings.Contains(out, "\nwarning: this session ran through agentctx") {
				t.Errorf("report table without the warning:\n%s", out)
			}
			out, errs, code = run(t, "", append([]string{"replay", "--limit", "20000", "--per-request=false", file}, ledger...)...)
			if code != 0 {
				t.Fatalf("replay: exit %d: %s", code, errs)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "agentctx replay: warning: ") || !strings.Contains(errs, tt.held) {
				t.Errorf("replay stderr = %q, want one warning line", errs)
			}
			var res struct {
				Managed *struct {
					Session string
					Marks   struct{ References int }
					Ledger  *json.RawMessage
					Warning string
				}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("replay: %v\n%s", err, out)
			}
			if m := res.Managed; m == nil || m.Session != "cc-managed-1" || m.Marks.References != 1 || m.Ledger != nil || !strings.Contains(m.Warning, tt.held) {
				t.Errorf("replay managed = %+v\n%s", m, out)
			}
		})
	}
}

// TestManagedSessionFromLedger: with a ledger (written through the
// session store's API) holding the transcript's session, report and
// replay report the ledger's requests, compactions and money, not the
// replay's, and warn of nothing (issue 48.2).
func TestManagedSessionFromLedger(t *testing.T) {
	for _, backend := range []string{"ws", "ws.db", ".agentctx"} {
		t.Run(backend, func(t *testing.T) {
			loc := filepath.Join(t.TempDir(), backend)
			flags := []string{"--ledger", loc}
			if backend == ".agentctx" { // the default: the project's own workspace
				t.Chdir(filepath.Dir(loc))
				flags = nil
			}
			if backend != "ws.db" {
				if err := os.Mkdir(loc, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			ss, err := openSessions(t.Context(), loc)
			if err != nil {
				t.Fatal(err)
			}
			l, err := session.LedgerOf(ss)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
			entry := func(sid string, s int, cost, without float64, compacted bool) session.LedgerEntry {
				return session.LedgerEntry{Time: at.Add(time.Duration(s) * time.Second), Session: sid, API: "anthropic", Model: "claude-sonnet-4-5",
					Client: "claude-code", InputTokens: 1000, CacheReadTokens: 50000, CacheWriteTokens: 2000, OutputTokens: 30,
					CostUSD: cost, CostWithoutUSD: without, Compacted: compacted}
			}
			if err := l.Append(t.Context(), []session.LedgerEntry{
				entry("cc-managed-2", 1, 0.25, 0.5, false), entry("other", 2, 9, 9, true), entry("cc-managed-2", 3, 0.25, 0.75, true),
			}); err != nil {
				t.Fatal(err)
			}
			if err := ss.Close(); err != nil {
				t.Fatal(err)
			}
			file := managedTranscript(t, "cc-managed-2")
			out, errs, code := run(t, "", append([]string{"report", "--limit", "20000", file}, flags...)...)
			if code != 0 || errs != "" {
				t.Fatalf("report: exit %d: %s", code, errs)
			}
			want := `session.jsonl: from the agentctx ledger of session "cc-managed-2": 2 requests, 1 compaction(s); cost $0.5000, without agentctx $1.2500, saved $0.7500`
			if !strings.HasPrefix(out, want+"\n") || !strings.Contains(out, "53,000") || strings.Count(out, "compaction\n") != 1 {
				t.Errorf("report:\n%s\nwant it to start with %q, a line per ledger entry (53,000 forwarded) and one compaction", out, want)
			}
			out, errs, code = run(t, "", append([]string{"replay", "--limit", "20000", "--per-request=false", file}, flags...)...)
			if code != 0 || errs != "" {
				t.Fatalf("replay: exit %d: %s", code, errs)
			}
			type money struct {
				CostUSD        float64 `json:"cost_usd"`
				CostWithoutUSD float64 `json:"cost_without_usd"`
				SavedUSD       float64 `json:"saved_usd"`
			}
			var res struct {
				Requests, Compactions int
				money
				Managed *struct {
					Session string
					Ledger  *struct{ Requests int }
					Warning string
				}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if res.Requests != 2 || res.Compactions != 1 || res.money != (money{0.5, 1.25, 0.75}) {
				t.Errorf("replay: %d requests, %d compactions, %+v; want the ledger's 2, 1, {0.5 1.25 0.75}\n%s", res.Requests, res.Compactions, res.money, out)
			}
			if m := res.Managed; m == nil || m.Session != "cc-managed-2" || m.Ledger == nil || m.Ledger.Requests != 2 || m.Warning != "" {
				t.Errorf("replay managed = %+v", m)
			}
		})
	}
}
