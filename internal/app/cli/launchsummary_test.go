package cli

import (
	"testing"

	"github.com/agentctx/agentctx/proxy"
)

func TestLaunchSummaryLine(t *testing.T) {
	bill := func(cost, without float64) proxy.Bill { return proxy.Bill{CostUSD: cost, CostWithoutUSD: without} }
	for _, c := range []struct {
		total    proxy.TotalStats
		sessions []int // compactions per session
		want     string
	}{
		{proxy.TotalStats{Requests: 33, Bill: bill(0.8628, 1.7599)}, []int{2, 1}, "33 requests, 3 compactions, $0.86 instead of $1.76"},
		{proxy.TotalStats{Requests: 1, Bill: bill(0.0042, 0.0042)}, []int{1}, "1 request, 1 compaction, $0.0042 instead of $0.0042"},
		{proxy.TotalStats{}, nil, "0 requests, 0 compactions, $0.00 instead of $0.00"},
		{proxy.TotalStats{Requests: 2, Bill: bill(1.5, 1.25)}, []int{0, 0}, "2 requests, 0 compactions, $1.50 instead of $1.25"},
	} {
		var ss []proxy.SessionStats
		for _, n := range c.sessions {
			ss = append(ss, proxy.SessionStats{Compactions: n})
		}
		if got := launchSummary(c.total, ss); got != c.want {
			t.Errorf("launchSummary = %q, want %q", got, c.want)
		}
	}
}
