package main

import (
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
	rep, err := run(2, 3, 60_000, 2, testbin.Agentctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 || rep.Warm != 4 || rep.ProxyP50MS <= 0 || rep.OutsideP50MS <= 0 || rep.BytesIn == 0 || rep.BytesOut == 0 {
		t.Fatalf("report %+v", rep)
	}
}
