package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/session/memsession"
	"github.com/agentctx/agentctx/transcript"
)

// TestFindManaged: a transcript is recognised as a session that ran
// through agentctx by the ledger's entries of its session id or by its
// marks; without entries, a marked one carries a warning, an unmarked one
// is not recognised (issue 48.2).
func TestFindManaged(t *testing.T) {
	line := func(sid, typ, msg string, i int) string {
		return `{"type":"` + typ + `","sessionId":"` + sid + `","uuid":"u` + string(rune('a'+i)) + `","timestamp":"2026-01-02T10:00:0` + string(rune('0'+i)) + `Z","message":` + msg + "}\n"
	}
	doc := func(sid, result string) string {
		return line(sid, "user", `{"role":"user","content":"go"}`, 0) +
			line(sid, "assistant", `{"role":"assistant","id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}`, 1) +
			line(sid, "user", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"`+result+`"}]}`, 2)
	}
	ref := `<knowledge_list>\n<knowledge id=\"tool_result_t1\">x</knowledge>\n</knowledge_list>`
	ss := memsession.New()
	l, err := session.LedgerOf(ss)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	if err := l.Append(context.Background(), []session.LedgerEntry{
		{Time: at, Session: "s-led", InputTokens: 10, CacheReadTokens: 100, CostUSD: 0.1, CostWithoutUSD: 0.3},
		{Time: at.Add(time.Second), Session: "s-led", CostUSD: 0.1, CostWithoutUSD: 0.2, Compacted: true},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, in string
		ledger   session.Ledger
		managed  bool
		requests int // from the ledger; 0 for none
		warning  string
	}{
		{"plain, no ledger", doc("s-plain", "a.go"), nil, false, 0, ""},
		{"plain, ledger without it", doc("s-plain", "a.go"), l, false, 0, ""},
		{"marked, no ledger", doc("s-mark", ref), nil, true, 0, "this session ran through agentctx (1 reference) and no ledger was found"},
		{"marked, ledger without it", doc("s-mark", ref), l, true, 0, `the ledger holds no entry of session "s-mark": the figures are a replay`},
		{"in the ledger, unmarked", doc("s-led", "a.go"), l, true, 2, ""},
		{"in the ledger, marked", doc("s-led", ref), l, true, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := transcript.ReadDocument(context.Background(), strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			m, err := FindManaged(context.Background(), d, tt.ledger)
			if err != nil {
				t.Fatal(err)
			}
			if (m != nil) != tt.managed {
				t.Fatalf("managed = %+v, want %v", m, tt.managed)
			}
			if m == nil {
				return
			}
			if got := 0; m.Ledger != nil {
				got = m.Ledger.Requests
				if got != tt.requests || m.Ledger.CostUSD != 0.2 || m.Ledger.SavedUSD != 0.3 || m.Ledger.Compactions != 1 {
					t.Errorf("ledger = %+v", m.Ledger)
				}
			} else if tt.requests != 0 {
				t.Errorf("no ledger, want %d requests", tt.requests)
			}
			if (tt.warning == "") != (m.Warning == "") || !strings.Contains(m.Warning, tt.warning) {
				t.Errorf("warning = %q, want %q", m.Warning, tt.warning)
			}
			r := &Report{Requests: 9, Compactions: 5, CacheBreaks: 3, CostUSD: 7, Timeline: make([]TimelinePoint, 2)}
			m.ApplyToReport(r)
			if r.Managed != m {
				t.Error("report without Managed")
			}
			if m.Ledger != nil && (r.Requests != 2 || r.Compactions != 1 || r.CacheBreaks != 0 || r.CostUSD != 0.2 || len(r.Timeline) != 2 ||
				r.Timeline[0].TokensForwarded != 110 || !r.Timeline[1].Compacted) {
				t.Errorf("report from the ledger = %+v", r)
			}
			if m.Ledger == nil && (r.Requests != 9 || r.CostUSD != 7) {
				t.Errorf("report without a ledger changed: %+v", r)
			}
		})
	}
}
