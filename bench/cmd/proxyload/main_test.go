package main

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit/testbin"
)

// TestSmoke runs the load script small: two sessions of 60 KB, three
// requests each, through the agentctx proxy built once per source tree
// (internal/testkit/testbin; the command builds its own when run alone).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agentctx binary")
	}
	rep, err := run(shape{sessions: 2, requests: 3, size: 60_000, conc: 2, lines: 100}, testbin.Agentctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 || rep.Warm != 4 || rep.ProxyP50MS <= 0 || rep.OutsideP50MS <= 0 || rep.BytesIn == 0 || rep.BytesOut == 0 || rep.PeakRSSMB < rep.RSSMB {
		t.Fatalf("report %+v", rep)
	}
	// A history of small messages: a one-word result each.
	small := newHistory(0, 20_000, 0)
	if n := len(small.msgs); n < 100 || !strings.Contains(small.msgs[2], `"content":"ok"`) {
		t.Fatalf("%d messages; the first result %s", n, small.msgs[2])
	}
}
