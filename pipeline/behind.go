package pipeline

import (
	"encoding/hex"
	"fmt"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/prune"
)

// A request is behind its session when its history is no longer than the
// part a compaction summarized and is the start of it: a retry, a
// regenerate, or a request sent alongside a longer one of the same
// session. The summary cannot stand for it (it would be the whole request,
// its last turn and pending tool calls gone), so the request is prepared
// from its own messages, and the session's compaction is left in place for
// the longer history.
//
// A compaction keeps the digests of the last maxMarks prefixes of the
// history it summarized (compactionState.Marks) to recognise a shorter
// request as such a start; a request shorter than those, or whose start
// differs, is a history that went another way, and the compaction is
// dropped.

// maxMarks is how many prefix digests a compaction keeps: requests that
// many messages behind it are recognised.
const maxMarks = 64

// markSize is the bytes of SHA-256 a mark keeps.
const markSize = 8

// startOf reports whether hist, no longer than what cs summarized, is the
// start of that history. The call asks for its input as repaired and as
// sent: a request that ends in a tool call, answered by repair, is still
// the start of the longer history, where the call was answered.
func (c *call) startOf(cs *compactionState, hist []agentctx.Message, facts []agentctx.Facts) bool {
	switch from := cs.N - len(cs.Marks); {
	case len(hist) == cs.N:
		d, ok := c.p.prefixDigest(hist, facts)
		return ok && hexDigest(d) == cs.Digest
	case len(hist) == 0 || len(hist) > cs.N || len(hist) < from || from < 0:
		return false
	default:
		d, ok := digestOf(hist)
		return ok && hex.EncodeToString(d[:markSize]) == cs.Marks[len(hist)-from]
	}
}

// A request is behind its session too when it holds no tool result new to
// the session while the session holds decisions on results it lacks: the
// start of a longer history the session has prepared (a retry, a
// regenerate, a request sent alongside a longer one). Such a request is
// prepared from its own messages:
//   - a decision of the longer history applies to its results only where it
//     would be made for the request itself: a prune where prune finds the
//     result stale in it, an offload by the cold-cache sweep outside its
//     most recent results (offloadedHere); its last turn and recent results
//     stay as it sent them;
//   - it makes no new decision on the longer history's results (no
//     clearing batch, no sweep);
//   - it leaves the session's state for the longer history: no decision
//     forgotten, no growth observed, no compaction kept. The results a
//     request behind a compaction sees anew (the longer history's were
//     summarized) are kept marked as such (resultState.Behind): a later
//     retry gets the same decisions on them, and they do not make the
//     longer history's next request look behind.

// checkBehind marks the call behind its session as above. The store step
// has run: every result of the request is in the state, and c.unsent holds
// those it added.
func (c *call) checkBehind() {
	if c.behind {
		for k := range c.unsent {
			c.st.Results[k].Behind = true
		}
		return
	}
	lacks := 0
	if len(c.unsent) == 0 {
		for k, rs := range c.st.Results {
			if !rs.Behind && !c.seen[k] {
				lacks++
			}
		}
	}
	if lacks == 0 {
		for k := range c.seen { // the history's own from now on
			c.st.Results[k].Behind = false
		}
		return
	}
	c.behind = true
	c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("the request lacks %d of the session's tool results and holds none new (a retry, or a request older than the session's last): it is prepared from its own messages, and the session's decisions are kept for the longer history", lacks))
}

// offloadedHere returns the positions of the results whose offloaded
// decision applies to this call, nil for all of them: in a call behind its
// session, a decision of the cold-cache sweep (resultState.Swept) does not
// apply to a result among the call's most recent ones, which the sweep
// keeps whole.
func (c *call) offloadedHere() map[[2]int]bool {
	if !c.behind {
		return nil
	}
	keep := c.p.opts.Prune.KeepRecent
	if keep == 0 {
		keep = prune.DefaultKeepRecent
	}
	var rs [][2]int
	for r := range agentctx.ToolResults(c.view[c.live:]) {
		rs = append(rs, [2]int{r.Message + c.live, r.Block})
	}
	here := make(map[[2]int]bool, len(rs))
	for i, pos := range rs {
		st := c.results.state(pos)
		if st != nil && st.Action == actionOffloaded && (!st.Swept || i < len(rs)-max(keep, 0)) {
			here[pos] = true
		}
	}
	return here
}
