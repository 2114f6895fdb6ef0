package pipeline

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/agentctx/agentctx/internal/base/textfmt"
)

// A client's own summary request (CallOptions.ClientSummary) is answered
// by a summary that replaces the history in the client: what the request
// shows the model is all the summary can keep. A result the model has
// read before (sent by an earlier request, whole or as the reference it
// could read back) was there for it to act on; a result new in the
// request was not, and a reference in its place leaves the summary
// nothing of it (costsim, Codex 0.169: step 35's 55,000-character read,
// new in Codex's compaction request, reached the summary as a pointer,
// Codex's compacted history kept neither, and the task's chain broke).
// So the offload step sends those results whole, within the window.

// keepSummaryWhole undoes, in a client's summary request, the offload
// decisions this call made on results new in it (the store step's, and
// the cold-cache sweep's), smallest first, for as many as the request,
// counted as it will be forwarded with them whole, keeps within the
// compaction limit; the rest (the largest) keep their references, with a
// warning (which the proxy logs). Their state then records them whole, as
// sent. It adds the count to rep.
func (c *call) keepSummaryWhole(rep *OffloadReport) {
	if !c.co.ClientSummary || len(c.unsent) == 0 {
		return
	}
	type candidate struct {
		rs    *resultState
		delta int // the tokens it adds whole, beyond its reference's
	}
	var cands []candidate
	at := map[*resultState]int{} // a result sent twice is one decision
	for pos, e := range c.results.all {
		if rs := e.rs; rs.Action == actionOffloaded && c.unsent[e.key] {
			delta := max(c.p.mc.CountContent(resultContent(c.src, pos[0], pos[1]))-c.p.mc.CountText(rs.Content), 0)
			if i, ok := at[rs]; ok {
				cands[i].delta += delta
				continue
			}
			at[rs] = len(cands)
			cands = append(cands, candidate{rs, delta})
		}
	}
	if len(cands) == 0 {
		return
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(a.delta, b.delta) })
	fwd, limit, ratio := c.forwardedTokens(), c.limit(), c.p.opts.EstimateRatio
	kept, over := 0, 0
	for i, k := range cands {
		if c.st.estimate(fwd+k.delta, ratio) > limit { // and so would every larger one
			for _, r := range cands[i:] {
				over += r.delta
			}
			break
		}
		fwd += k.delta
		rs := k.rs // kept whole, as if never replaced: its artifact stays
		rs.Action, rs.At, rs.Content, rs.Chars, rs.Swept = "", time.Time{}, "", 0, false
		c.st.Removed--
		kept++
	}
	rep.KeptWhole = kept
	if n := len(cands) - kept; n > 0 {
		c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("the client's summary request: %d of its %d new large result(s) sent as references, not whole: whole, the request would count about %s tokens, over the limit of %s",
			n, len(cands), textfmt.Thousands(c.st.estimate(fwd+over, ratio)), textfmt.Thousands(limit)))
	}
}
