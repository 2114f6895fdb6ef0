package pipeline

import "github.com/agentctx/agentctx"

// mapToolResults is agentctx.MapToolResults, with the indices of the
// messages it changed, that returns msgs itself when fn replaces nothing:
// a pass that changes none of the results of a long list does not copy
// it (issue 24: each such pass copied the 100,000 messages of a 10 MB
// request). fn is called once per result, in order, as MapToolResults
// calls it; when it replaces some, the list is made by MapToolResults
// with those replacements, so the messages are the same values.
func mapToolResults(msgs []agentctx.Message, fn func(agentctx.ToolResult) (agentctx.Content, bool)) ([]agentctx.Message, []int) {
	type replacement struct {
		msg, block int
		content    agentctx.Content
	}
	var repl []replacement
	for r := range agentctx.ToolResults(msgs) {
		if c, ok := fn(r); ok {
			repl = append(repl, replacement{r.Message, r.Block, c})
		}
	}
	if len(repl) == 0 {
		return msgs, nil
	}
	var changed []int
	k := 0
	out := agentctx.MapToolResults(msgs, func(r agentctx.ToolResult) (agentctx.Content, bool) {
		if k == len(repl) || repl[k].msg != r.Message || repl[k].block != r.Block {
			return agentctx.Content{}, false
		}
		c := repl[k].content
		k++
		if len(changed) == 0 || changed[len(changed)-1] != r.Message {
			changed = append(changed, r.Message)
		}
		return c, true
	})
	return out, changed
}
