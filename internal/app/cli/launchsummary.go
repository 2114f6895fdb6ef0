package cli

import (
	"fmt"

	"github.com/agentctx/agentctx/proxy"
)

// launchSummary is the line agentctx claude and codex print when the
// client exits: what their own proxy forwarded and billed, "33 requests,
// 3 compactions, $0.86 instead of $1.76".
func launchSummary(total proxy.TotalStats, sessions []proxy.SessionStats) string {
	compactions := 0
	for _, s := range sessions {
		compactions += s.Compactions
	}
	return fmt.Sprintf("%s, %s, %s instead of %s", plural(total.Requests, "request"), plural(compactions, "compaction"),
		usd(total.CostUSD), usd(total.CostWithoutUSD))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
