package proxy

import (
	"context"
	"fmt"
	"strconv"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/savings"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
)

// Managed is what agentctx report and replay know of a recorded session
// that ran through agentctx (its proxy, its middleware): the transcript's
// recorded usage is that of the requests as agentctx edited them, not of
// the history the transcript holds, so a replay of it reports neither
// what the session did nor what it billed. The ledger the proxy keeps
// (session.Ledger) does.
type Managed struct {
	// Session is the transcript's session id (a Claude Code transcript's
	// sessionId, the proxy's session key); absent when it carries none.
	Session string `json:"session,omitempty"`
	// Marks counts agentctx's marks in the transcript (FindMarks).
	Marks Marks `json:"marks"`
	// Ledger is what the ledger holds of the session: its requests,
	// compactions, bill, bill without agentctx and saving, the figures
	// reported in place of the replay's; absent when the ledger holds no
	// entry of the session (Warning says so).
	Ledger *savings.Totals `json:"ledger,omitempty"`
	// Warning, set when the ledger holds nothing of a session recognised
	// by its marks, says that the figures reported are the replay's, not
	// the session's.
	Warning string `json:"warning,omitempty"`

	entries []session.LedgerEntry
}

// FindManaged tells whether doc is the transcript of a session that ran
// through agentctx, by the ledger (l holds entries of the transcript's
// session id: transcript.SessionID, the key the proxy kept them under) or
// by agentctx's marks in its messages (FindMarks). It returns nil for a
// session neither recognises. l may be nil (no ledger to read): a session
// recognised by its marks alone then has a Warning.
func FindManaged(ctx context.Context, doc *agentctx.Document, l session.Ledger) (*Managed, error) {
	m := &Managed{Session: transcript.SessionID(doc), Marks: FindMarks(doc.Messages)}
	if l != nil && m.Session != "" {
		entries, err := l.Query(ctx, session.LedgerFilter{Session: m.Session})
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		if len(entries) > 0 {
			t := savings.Totals{}
			for _, e := range entries {
				t.Add(e)
			}
			t.Finish()
			m.Ledger, m.entries = &t, entries
			return m, nil
		}
	}
	if !m.Marks.Any() {
		return nil, nil
	}
	held := "no ledger was found"
	if l != nil {
		held = "the ledger holds no entry of it"
		if m.Session != "" {
			held = "the ledger holds no entry of session " + strconv.QuoteToGraphic(m.Session)
		}
	}
	m.Warning = fmt.Sprintf("this session ran through agentctx (%s) and %s: the figures are a replay of the requests as agentctx edited them, not what the session did or billed",
		m.Marks, held)
	return m, nil
}

// ApplyToReplay puts the ledger's figures (requests, compactions, cost,
// cost without agentctx, saving) in res in place of the replayed ones;
// without a ledger it leaves res alone.
func (m *Managed) ApplyToReplay(res *replay.Result) {
	if m == nil || m.Ledger == nil {
		return
	}
	t := m.Ledger
	res.Requests, res.Compactions = t.Requests, t.Compactions
	res.CostUSD, res.CostWithoutUSD, res.SavedUSD = t.CostUSD, t.CostWithoutUSD, t.SavedUSD
}

// ApplyToReport records m in r (r.Managed) and, with a ledger, makes r
// the report of what the proxy did and billed: the ledger's figures, a
// timeline point per ledger entry (the tokens billed as forwarded, the
// cost, the compaction; the tokens the client sent as the replay counted
// them, when the replay has as many requests). Clearing batches and cache
// breaks, which the ledger does not keep, are then 0.
func (m *Managed) ApplyToReport(r *Report) {
	if m == nil {
		return
	}
	r.Managed = m
	if m.Ledger == nil {
		return
	}
	t := m.Ledger
	r.Requests, r.Compactions, r.ClearingBatches, r.CacheBreaks = t.Requests, t.Compactions, 0, 0
	r.CostUSD, r.CostWithoutUSD, r.SavedUSD = t.CostUSD, t.CostWithoutUSD, t.SavedUSD
	replayed := r.Timeline
	r.Timeline = make([]TimelinePoint, 0, len(m.entries))
	for i, e := range m.entries {
		p := TimelinePoint{Status: 200, TokensForwarded: int(e.InputTokens + e.CacheReadTokens + e.CacheWriteTokens),
			InputTokens: int(e.InputTokens), CacheReadTokens: int(e.CacheReadTokens), CacheWriteTokens: int(e.CacheWriteTokens), OutputTokens: int(e.OutputTokens),
			Compacted: e.Compacted, CostUSD: round6(e.CostUSD)}
		if len(replayed) == len(m.entries) {
			p.TokensClient = replayed[i].TokensClient
		}
		r.Timeline = append(r.Timeline, p)
	}
}
