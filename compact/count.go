package compact

import (
	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/tokens"
)

// messageCounter returns the counter for one call: Options.MessageCounter
// when set (its cache then serves every call), else a new one over
// Options.Counter without a cache.
func (o Options) messageCounter() *tokens.MessageCounter {
	if o.MessageCounter != nil {
		return o.MessageCounter
	}
	return tokens.NewMessageCounter(tokens.MessageOptions{Counter: o.Counter, CacheSize: -1, Logger: o.Logger})
}

// countEach returns the token count of each message and their sum.
func countEach(mc *tokens.MessageCounter, msgs []agentctx.Message) ([]int, int) {
	counts := make([]int, len(msgs))
	total := 0
	for i := range msgs {
		counts[i] = mc.CountMessage(msgs[i])
		total += counts[i]
	}
	return counts, total
}

// sum returns the sum of counts.
func sum(counts []int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}
